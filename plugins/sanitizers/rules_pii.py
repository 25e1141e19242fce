"""Layer-1 rules for personal data: e-mail addresses, user names in home paths, IP addresses, phones, cards.

Decisions (asserted by the corpus):

* E-mail addresses at any domain are personal or name an organisation. Kept: the documentation domains
  (``example.com/.org/.net``, ``*.example``, ``*.test``, ``*.invalid``), no-reply service addresses, template
  locals (``your.name@``), ``git@host:org/repo`` (an SSH remote), ``logo@2x.png`` and ``react@18.2.0``
  (file and package names), and an ``@`` inside a URL's credentials (the URL rule's).
* IP addresses: globally routable unicast addresses and private ones (RFC 1918, CGNAT, IPv6 unique-local:
  they map a deployment's network) go. Loopback, unspecified, link-local, documentation, benchmarking,
  multicast and reserved ranges stay, as do the public resolvers (8.8.8.8, 1.1.1.1...), so
  ``127.0.0.1:8000`` survives. A dotted quad that reads as a version (``numpy 1.26.4.0``, ``v1.2.3.4``,
  ``==1.2.3.4``, ``pkg-1.2.3.4``) is not an address; a quad after a network word (``from``, ``host``,
  ``connect to``...) or an error name, after ``@``, ``=`` or ``//``, followed by ``:port``, with a part of 100
  or more, or in 192.168/16 or 172.16/12 always is.
* Phones need phone formatting: a ``+`` country code, or the North-American ``(202) 555-0143`` /
  ``202-555-0143`` shapes, or a ``phone:``/``tel``/``mobile`` label. A bare run of digits is never a phone.
* Cards: 13-19 digits, uniformly grouped, a known issuer prefix and a valid Luhn checksum.
* US social security numbers: ``ddd-dd-dddd`` named as one (``SSN``, ``social security number``...: a part or order
  number has the same shape) and as issued (no area 000, 666 or 9xx, no zero group or serial), not the specimens
  printed in documentation. IBANs: country letters, check digits and a valid mod-97 checksum, compact or in groups of
  four, not the registry's and textbooks' examples.
* Home paths: the account name (when the path rule, which replaces more, does not apply); shared account
  names of CI runners and images (``runner``, ``ubuntu``, ``root``...) are not personal.
"""

from __future__ import annotations

import re

from gateway_plugins.sanitizers.engine import Refiner, Rule, Validator, View
from gateway_plugins.sanitizers.heuristics import (
    GENERIC_ACCOUNTS,
    is_card_number,
    is_identifying_ip,
    is_placeholder,
    is_template,
)

__all__ = ["PII_RULES"]

_RESERVED_DOMAINS = ("example.com", "example.org", "example.net")
_RESERVED_TLDS = frozenset({"example", "test", "invalid"})
_SERVICE_LOCALS = frozenset(
    {"noreply", "no-reply", "donotreply", "do-not-reply", "mailer-daemon", "postmaster", "git"}
)  # fmt: skip
_TEMPLATE_LOCALS = re.compile(r"(?i)(?:your|my)[._-]?(?:name|email|user|mail|address)|(?:user|first|last)[._]?name")
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
    then than via: curl wget nc telnet traceroute route vpn nat public external wan egress ingress inet inet6
    brd gw default dhcp lease leased assigned subnet cidr network net interface eth0 ens3 docker0 pod vip
    nameservers resolver""".split()
)
_VERSION_MARKER = re.compile(r"(?:\b[vV]|(?i:\bversion|\bver|\brelease|\brev|\bbuild)[\s:=]*|(?:[=<>!~]=|[~^])\s*)$")
_NAME_BEFORE = re.compile(r"([A-Za-z][\w.+]{0,40})([ /_-])$")
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_PORT_AND_PATH = re.compile(r"\d{1,5}/")


def _in_url_authority(before: str) -> bool:
    """``scheme://user:pass…`` right before, with no port (``host:8443/``) in between: the ``@`` ends a URL's
    credentials, which the URL rule owns whatever the password holds (``/``, ``?``, ``@``...)."""
    token = before[max(before.rfind(c) for c in ' \t\n"<>`') + 1 :]
    scheme = token.find("://")
    if scheme < 0:
        return False
    authority = token[scheme + 3 :]
    colon = authority.find(":")
    return colon >= 0 and _PORT_AND_PATH.match(authority, colon + 1) is None


def _email_span(view: View) -> tuple[int, int] | None:
    """The address, without the ``n`` of a ``\\n`` escape before it (``…\\nalice@acme.io`` in JSON)."""
    if view.before(1) == "\\" and view.value[:1] in ("n", "r", "t"):
        view = view.at(view.start + 1, view.end)
    return (view.start, view.end) if _email(view) else None


def _email(view: View) -> bool:
    value = view.value
    local, _, domain = value.rpartition("@")
    domain_l = domain.lower()
    tld = domain_l[domain_l.rfind(".") + 1 :]
    if len(local) > 64 or tld in _FILE_TLDS or tld in _RESERVED_TLDS or domain_l.endswith(_RESERVED_DOMAINS):
        return False
    if len(domain) > 63 and any(not label or len(label) > 63 for label in domain_l.split(".")):
        return False
    if local.lower() in _SERVICE_LOCALS or _TEMPLATE_LOCALS.fullmatch(local) or is_template(local):
        return False
    before = view.before(8)
    if before.endswith(":") and not before.lower().endswith("mailto:"):
        return False  # user:password@host — the URL rule owns it
    before = view.before()
    return "://" not in before or not _in_url_authority(before)


def _home_user(view: View) -> bool:
    name = view.value
    if name.lower() in GENERIC_ACCOUNTS or name.startswith(("$", "%", "<", "{", "~", ".", "*")) or name == "..":
        return False
    if len(name) >= 3 and is_placeholder(name):
        return False
    # Inside a web URL (https://host/home/x) the segment is a route, not an account.
    line = view.line_before()
    prefix = line[max(line.rfind(" "), 0) :]
    scheme = prefix.find("://")
    return not (scheme >= 0 and prefix[scheme + 3 : scheme + 4] not in ("", "/"))


def _ipv4(view: View) -> bool:
    value = view.value
    if not is_identifying_ip(value):
        return False
    after = view.after(2)
    if after[:1] == ":" and after[1:2].isdigit():
        return True
    if after[:1] == "-" and after[1:2].isalpha():
        return False  # 1.0.0.0-SNAPSHOT, 1.2.3.4-rc1: a version
    before = view.before(40)
    if before.endswith(("//", "@", "[")):
        return True
    if _VERSION_MARKER.search(before):
        return False
    if before.endswith(("=", "(")) or value.startswith(("192.168.", "172.")):
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


def _ipv6(view: View) -> bool:
    value = view.value
    if len(value) > 45 or not 2 <= value.count(":") <= 7 or not any(c.isdigit() for c in value):
        return False
    host, _, port = value.rpartition(":")
    if host in ("::1", "::", ":") and port.isdigit():
        return False  # ECONNREFUSED ::1:3306, listening on :::8080: loopback or any address, then a port
    return is_identifying_ip(value)


def _phone(view: View) -> bool:
    digits = sum(c.isdigit() for c in view.value)
    return 7 <= digits <= 15


def _card(view: View) -> bool:
    value = view.value
    groups = re.split(r"[ -]", value)
    if len(groups) > 1:
        sizes = [len(g) for g in groups]
        if not ((all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4) or sizes in ([4, 6, 5], [4, 6, 4])):
            return False
    return is_card_number("".join(groups))


_DOCUMENTED_SSNS = frozenset({"123-45-6789", "078-05-1120", "219-09-9999"})
"""Specimen numbers printed in documentation and on sample cards (never issued)."""


def _ssn(view: View) -> bool:
    """A US social security number as the SSA issues them: area not 000, 666 or 9xx, group and serial not 0."""
    value = view.value
    area, group, serial = value.split("-")
    if value in _DOCUMENTED_SSNS or area in ("000", "666") or area[0] == "9":
        return False
    return group != "00" and serial != "0000"


_SPECIMEN_IBANS = frozenset(
    {"GB82WEST12345698765432", "GB29NWBK60161331926819", "DE89370400440532013000", "NL91ABNA0417164300",
     "FR1420041010050500013M02606", "CH9300762011623852957", "ES9121000418450200051332", "IT60X0542811101000000123456",
     "BE68539007547034", "AT611904300234573201"}
)  # fmt: skip
"""The examples printed by the IBAN registry, banks and textbooks (never an account someone holds)."""


def _iban(view: View) -> bool:
    """An IBAN: two letters, two check digits, and a valid ISO 13616 mod-97 checksum."""
    compact = view.value.replace(" ", "")
    if not 15 <= len(compact) <= 34 or is_placeholder(compact) or compact in _SPECIMEN_IBANS:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _p(
    kind: str,
    label: str,
    pattern: str,
    validate: Validator | None,
    *,
    requires: tuple[str, ...] = (),
    lower: bool = False,
    probe: str | None = None,
    left: str | None = None,
    right: str | None = None,
    conf: float = 0.9,
    refine: Refiner | None = None,
) -> Rule:
    return Rule(
        kind, "pii", label, pattern, validate, conf, requires, lower, probe, left=left, right=right, refine=refine
    )


_SEP = r"(?:/|\\\\?)"
_WIN_NAME = r"[^\\/\s:*?\"'<>|,;()]+"

PII_RULES: tuple[Rule, ...] = (
    _p(
        "email",
        "EMAIL",
        r"(?:^|[^\w.%+-])(?P<s>[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24})",
        None,
        requires=("@",),
        left=r"[\w.%+-]",
        right=r"[\w-]|\.[A-Za-z0-9]",
        refine=_email_span,
    ),
    _p(
        "home_path_user",
        "PATH_USER",
        rf"(?:{_SEP}(?:home|Users|export{_SEP}home|var{_SEP}home|usr{_SEP}home)|"
        rf"[A-Za-z]:{_SEP}(?:Users|Documents and Settings)){_SEP}"
        rf"(?:(?P<s>{_WIN_NAME} {_WIN_NAME}){_SEP}|(?P<s_one>{_WIN_NAME}))",
        _home_user,
        requires=("home", "Users", "Documents and Settings"),
    ),
    _p(
        "ip_address",
        "IP",
        rf"(?:^|[^\w.])(?P<s>{_OCTET}(?:\.{_OCTET}){{3}})",
        _ipv4,
        probe=r"\d\.\d{1,3}\.\d{1,3}\.\d",
        left=r"[\w.]",
        right=r"\.?\w|\.\d",
    ),
    _p(
        "ip_address",
        "IP",
        r"(?:^|[^\w:.])(?P<s>[0-9A-Fa-f]*:[0-9A-Fa-f]*:[0-9A-Fa-f:]*)",
        _ipv6,
        requires=(":",),
        probe=r":[0-9A-Fa-f]{0,4}:",
        left=r"[\w:.]",
        right=r"[\w:.]",
    ),
    _p(
        "phone",
        "PHONE",
        r"(?:^|[^\w+.-])(?P<s>\+\d{1,3}(?:[ .-]?\(?\d{1,5}\)?){1,5}(?:[ .-]?\d{2,5}))",
        _phone,
        requires=("+",),
        probe=r"\+\d",
        left=r"[\w+.-]",
        right=r"[\w-]|[.:]\d",
    ),
    _p(
        "phone",
        "PHONE",
        r"(?:^|[^\w+.-])(?P<s>(?:1[ .-]?)?(?:\([2-9]\d\d\)\s?|[2-9]\d\d[-.\s])[2-9]\d\d[-.]\d{4})",
        _phone,
        probe=r"\d\d[-.]\d{4}",
        left=r"[\w+.-]",
        right=r"[\w-]|[.:]\d",
    ),
    _p(
        "phone",
        "PHONE",
        r"(?i:\b(?:phone|tel|telephone|mobile|cell|fax|whatsapp|sms|call me at|contact number)\b)[^\n\d+]{0,12}"
        r"(?P<s>\+?\(?\d[\d ()./-]{5,18}\d)",
        _phone,
        requires=("phone", "tel", "mobile", "cell", "fax", "whatsapp", "sms", "call me", "contact"),
        lower=True,
        right=r"[\w-]|[.:]\d",
    ),
    _p(
        "card_number",
        "CARD",
        r"(?:^|[^\w.-])(?P<s>[2-6]\d{3}(?:[ -]?\d){9,15})",
        _card,
        probe=r"[2-6]\d{3}[ -]?\d{4}",
        left=r"[\w.-]",
        right=r"[\w-]|\.\d",
        conf=0.95,
    ),
    _p(
        "ssn",
        "SSN",
        # named as one: a part or order number has the same shape
        r"(?i:\b(?:ssn|ss#|social[ _-]?security(?:[ _-]?(?:number|num|no))?|soc\.? ?sec\.?)\b)[^\n\d]{0,20}"
        r"(?P<s>\d{3}-\d{2}-\d{4})",
        _ssn,
        requires=("ssn", "ss#", "social", "soc"),
        lower=True,
        right=r"[\w-]|\.\d",
    ),
    _p(
        "iban",
        "IBAN",
        r"(?:^|[^\w])(?P<s>[A-Z]{2}\d{2}(?:[A-Z0-9]{11,30}|(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?))",
        _iban,
        probe=r"[A-Z]{2}\d{2}[ A-Z0-9]",
        left=r"\w",
        right=r"\w",
    ),
)
"""Personal-data rules, in priority order."""
