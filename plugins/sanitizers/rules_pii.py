"""Layer-1 rules for personal data: e-mail addresses, user names in home paths, public IPs, phones, cards.

Decisions (documented in the plugin README and asserted by the corpus):

* IP addresses: only globally routable unicast addresses are personal data. Private, loopback, link-local,
  CGNAT, documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32), multicast and
  reserved ranges stay, as do the public resolvers (8.8.8.8, 1.1.1.1...), so ``127.0.0.1:8000`` survives.
  A dotted quad that reads as a version (``numpy 1.26.4.0``, ``v1.2.3.4``, ``==1.2.3.4``, ``pkg-1.2.3.4``)
  is not an address; a quad after a network word (``from``, ``host``, ``connect to``...) or an error name,
  after ``@``, ``=`` or ``//``, followed by ``:port``, or with a part of 100 or more always is.
* Phones need phone formatting: a ``+`` country code, or the North-American ``(202) 555-0143`` /
  ``202-555-0143`` shapes, or a ``phone:``/``tel``/``mobile`` label. A bare run of digits (an epoch
  timestamp, an id) is never a phone.
* Cards: 13-19 digits, uniformly grouped, a known issuer prefix and a valid Luhn checksum.
* E-mails at reserved domains (``example.com``, ``*.test``, ``*.invalid``, ``localhost``) and role
  addresses (``noreply@``) are not personal; ``git@github.com:org/repo`` is an SSH remote, not an e-mail.
* Home paths: the account name is redacted, the rest of the path kept; shared account names of CI runners
  and images (``runner``, ``ubuntu``, ``root``...) are not personal.
"""

from __future__ import annotations

import re

from gateway_plugins.sanitizers.engine import Locator, Rule, Validator
from gateway_plugins.sanitizers.heuristics import GENERIC_ACCOUNTS, is_card_number, is_placeholder, is_public_ip
from gateway_plugins.sanitizers.rules_secrets import span_value

__all__ = ["PII_RULES"]

_RESERVED_DOMAINS = ("example.com", "example.org", "example.net", "localhost")
_RESERVED_TLDS = (".example", ".test", ".invalid", ".localhost", ".local")
_ROLE_LOCALS = frozenset(
    {"noreply", "no-reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster", "git", "user", "you",
     "your.name", "yourname", "your-email", "username", "email", "name", "someone", "foo", "test"}
)  # fmt: skip
_FILE_TLDS = frozenset(
    "png jpg jpeg gif svg webp ico bmp js mjs cjs ts tsx jsx css scss less map json yaml yml toml lock txt log "
    "html htm xml pdf zip gz tgz whl exe dll bin pyc java class jar kt php rb go vue svelte wasm py md rs".split()
)
_NETWORK_WORDS = frozenset(
    """to from at on in by for of via is was are and or with as ip ips ipv4 addr address addresses host hosts
    hostname server servers peer remote client clients source src dst dest destination gateway proxy upstream
    downstream connect connecting connected connection resolve resolved resolves resolving reach reached
    unreachable listen listening bind bound ping pinging nameserver origin forwarded node nodes endpoint target
    user login ssh http https tcp udp dns lookup sent received request requests blocked banned allowed denied
    rejected accepted ban block allow deny whitelist blacklist allowlist denylist visitor attacker address:
    then than via: curl wget nc telnet traceroute route vpn nat public external wan egress ingress""".split()
)
_VERSION_MARKER = re.compile(r"(?:\b[vV]|(?i:\bversion|\bver|\brelease|\brev|\bbuild)[\s:=]*|(?:[=<>!~]=|[~^])\s*)$")
_NAME_BEFORE = re.compile(r"([A-Za-z][\w.+]*)([ /_-])$")


_EMAIL_LOCAL_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-"


def _email_start(text: str, hit: int, lo: int, _hi: int) -> int:
    """An e-mail match holds one ``@`` and starts where the run of local-part characters before it starts
    (its look-behind rejects any later start); a run longer than 64 cannot match."""
    chunk = text[max(lo, hit - 65) : hit]
    return hit - (len(chunk) - len(chunk.rstrip(_EMAIL_LOCAL_CHARS)))


def _run_before(run: str, longest: int) -> Locator:
    """A locator for a match that starts with up to ``longest`` characters of class ``run`` right before
    the anchor (the octet before ``.1``, the hex group before ``:``): the start of that run, the only place
    the pattern's look-behind lets a match through this hit start."""
    tail = re.compile(rf"{run}{{0,{longest}}}\Z")

    def locate(text: str, hit: int, lo: int, _hi: int) -> int:
        found = tail.search(text, max(lo, hit - longest), hit)
        return found.start() if found else hit

    return locate


def _email(match: re.Match[str], text: str) -> bool:
    value = span_value(match)
    local, _, domain = value.rpartition("@")
    domain_l = domain.lower()
    if domain_l.endswith(_RESERVED_DOMAINS) or domain_l.endswith(_RESERVED_TLDS):
        return False
    if domain_l.rsplit(".", 1)[-1] in _FILE_TLDS:
        return False
    if local.lower() in _ROLE_LOCALS or is_placeholder(local):
        return False
    start = match.start("s")
    if text[start - 1 : start] == ":" and not text[max(0, start - 7) : start].lower().endswith("mailto:"):
        return False  # user:password@host — the URL rule owns it
    return True


def _home_user(match: re.Match[str], text: str) -> bool:
    name = span_value(match)
    if name.lower() in GENERIC_ACCOUNTS or name.startswith(("$", "%", "<", "{", "~", ".", "*")) or name == "..":
        return False
    if len(name) >= 3 and is_placeholder(name):
        return False
    # Inside a web URL (https://host/home/x) the segment is a route, not an account.
    line_start = max(text.rfind("\n", 0, match.start()), text.rfind(" ", 0, match.start())) + 1
    prefix = text[line_start : match.start()]
    scheme = prefix.find("://")
    return not (scheme >= 0 and prefix[scheme + 3 : scheme + 4] not in ("", "/"))


def _ipv4(match: re.Match[str], text: str) -> bool:
    value = span_value(match)
    if not is_public_ip(value):
        return False
    start, end = match.span("s")
    after = text[end : end + 2]
    if after[:1] == ":" and after[1:2].isdigit():
        return True
    before = text[max(0, start - 40) : start]
    if before.endswith(("//", "@", "[")):
        return True
    if _VERSION_MARKER.search(before):
        return False
    if before.endswith(("=", "(")):
        return True
    name = _NAME_BEFORE.search(before)
    if name is None:
        return True
    word, sep = name.group(1).lower(), name.group(2)
    if sep != " ":
        return False  # pkg-1.2.3.4, requests/2.31.0.1
    if word in _NETWORK_WORDS or word.endswith(("error", "exception", "failed", "refused", "timeout")):
        return True
    # "numpy 1.26.4.0": a name then a quad reads as a version only with version-sized parts
    return any(int(part) >= 100 for part in value.split("."))


def _ipv6(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    return value.count(":") >= 2 and any(c.isdigit() for c in value) and is_public_ip(value)


def _phone(match: re.Match[str], _text: str) -> bool:
    digits = sum(c.isdigit() for c in span_value(match))
    return 7 <= digits <= 15


def _card(match: re.Match[str], _text: str) -> bool:
    value = span_value(match)
    groups = re.split(r"[ -]", value)
    if len(groups) > 1:
        sizes = [len(g) for g in groups]
        if not ((all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4) or sizes in ([4, 6, 5], [4, 6, 4])):
            return False
    return is_card_number("".join(groups))


def _p(
    kind: str,
    label: str,
    pattern: str,
    validate: Validator,
    *,
    anchors: tuple[str | re.Pattern[str], ...],
    window: tuple[int, int],
    lower: bool = False,
    conf: float = 0.9,
    requires: tuple[str, ...] = (),
    anchored: bool = False,
    locate: Locator | None = None,
) -> Rule:
    return Rule(
        kind,
        "pii",
        label,
        re.compile(pattern),
        validate,
        conf,
        anchors,
        lower,
        window,
        False,
        requires,
        anchored=anchored or locate is not None,
        locate=locate,
    )


_SEP = r"(?:/|\\\\?)"
_WIN_NAME = r"[^\\/\s:*?\"'<>|,;()]+"

PII_RULES: tuple[Rule, ...] = (
    _p(
        "email",
        "EMAIL",
        r"(?<![\w.%+-])(?P<s>[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.[A-Za-z]{2,24})(?![\w-]|\.[A-Za-z0-9])",
        _email,
        anchors=("@",),
        window=(66, 300),
        locate=_email_start,
    ),
    _p(
        "home_path_user",
        "PATH_USER",
        rf"(?:{_SEP}(?:home|Users|export{_SEP}home|var{_SEP}home|usr{_SEP}home)|"
        rf"(?<![A-Za-z])[A-Za-z]:{_SEP}(?:Users|Documents and Settings)){_SEP}"
        rf"(?P<s>{_WIN_NAME} {_WIN_NAME}(?=[\\/])|{_WIN_NAME})",
        _home_user,
        anchors=("home", "Users", "Documents and Settings"),
        window=(14, 140),
    ),
    _p(
        "public_ip",
        "IP",
        r"(?<![\w.])(?P<s>(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})"
        r"(?!\.?\w|\.\d)",
        _ipv4,
        # The first dot of every dotted quad: the octet before it and the rest, with the two characters of
        # context the look-ahead reads, fit the window.
        anchors=(re.compile(r"\.\d{1,3}\.\d{1,3}\.\d"),),
        window=(4, 20),
        locate=_run_before(r"\d", 3),
    ),
    _p(
        "public_ip",
        "IP",
        r"(?<![\w:.])(?P<s>[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7})(?![\w:.])",
        _ipv6,
        anchors=(re.compile(r":[0-9A-Fa-f]{0,4}:"),),
        window=(40, 44),
        locate=_run_before(r"[0-9A-Fa-f]", 4),
        requires=(":",),
    ),
    _p(
        "phone",
        "PHONE",
        r"(?<![\w+.-])(?P<s>\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){1,5}(?:[ .-]?\d{2,5}))(?![\w-]|[.:]\d)",
        _phone,
        anchors=(re.compile(r"\+\d"),),
        window=(0, 40),
        anchored=True,
        requires=("+",),
    ),
    _p(
        "phone",
        "PHONE",
        r"(?<![\w+.-])(?P<s>(?:1[ .-]?)?(?:\([2-9]\d\d\)\s?|[2-9]\d\d[-.\s])[2-9]\d\d[-.]\d{4})(?![\w-]|[.:]\d)",
        _phone,
        anchors=(re.compile(r"-\d{4}"), re.compile(r"\.\d{4}")),
        window=(20, 6),
    ),
    _p(
        "phone",
        "PHONE",
        r"(?i:\b(?:phone|tel|telephone|mobile|cell|fax|whatsapp|sms|call me at|contact number)\b)[^\n\d+]{0,12}"
        r"(?P<s>\+?\(?\d[\d ()./-]{5,18}\d)(?![\w-]|[.:]\d)",
        _phone,
        anchors=("phone", "tel", "mobile", "cell", "fax", "whatsapp", "sms", "call me", "contact"),
        lower=True,
        window=(0, 60),
        anchored=True,
    ),
    _p(
        "card_number",
        "CARD",
        # the left boundary is checked after the first digit, so the window is scanned for [2-6] first
        r"(?P<s>[2-6](?<![\w.-][2-6])\d{3}(?:[ -]?\d){9,15})(?![\w-]|\.\d)",
        _card,
        anchors=(re.compile(r"[2-6]\d{3}[ -]?\d{4}"),),
        window=(0, 24),
        conf=0.95,
    ),
)
"""Personal-data rules, in priority order."""
