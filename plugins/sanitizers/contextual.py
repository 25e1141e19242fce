"""Layer 2, ``contextual``: what regexes for known formats miss, found from the words around it.

Offline and deterministic (the default second layer when no LLM is configured). It catches

* random-looking values near credential words, also in prose and CLI flags
  (``the admin password is Tr0ub4dor&3``, ``--token 7f3a…``, ``mysql -pS3cret``);
* credentials inside URLs and connection strings of *any* scheme (``amqp://u:p@``, ``?access_token=``,
  ``X-Amz-Signature=``, ``curl -u user:pass``);
* internal host names (``*.internal``, ``*.corp``, ``*.local``, ``*.lan``, ``*.intranet``, ``*.home.arpa``).

Its filters keep what only *looks* random: hashes, UUIDs and git SHAs (unless directly assigned to a strong
credential word: a UUID that *is* the ``api_token`` is a secret), version strings, paths, URLs, identifiers
and template placeholders (``your-api-key-here``, ``<TOKEN>``, ``${API_KEY}``, ``xxx``, ``changeme``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio

from gateway.api import FieldKind, PlaceholderMap, SanitizedText
from gateway_plugins.sanitizers.engine import Candidate, Found, Rule, RuleSet, ScanText, add, find_all, redact
from gateway_plugins.sanitizers.heuristics import (
    char_classes,
    is_hash_like,
    is_placeholder,
    is_reference,
    is_version,
    looks_like_secret,
)
from gateway_plugins.sanitizers.rules_secrets import span_value

__all__ = ["CONTEXT_RULES", "ContextualSanitizer"]

_STRONG = ("password", "passwd", "passphrase", "passcode", "pwd", "secret", "token", "apikey", "credential",
           "credentials")  # fmt: skip
_WEAK = ("key", "auth", "signature", "sig", "session", "cookie")
_GLUE = frozenset(
    """is was are be = : := => -> to of as the my our your new set using with value was: is: now here it
    for this that reset changed updated - -- ' " ` ( [ { , ;""".split()
)
_TOKEN = re.compile(r"[^\s\"'`,;(){}\[\]<>&=](?:[^\s\"'`,;(){}\[\]<>&]|&(?!\w+=))*")
_IDENTIFIER = re.compile(
    r"^(?:[a-z]+(?:[_-][a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z]+(?:_[A-Z]+)+)$"
)
_IDENT_REST = re.compile(r"[A-Za-z0-9_]{1,40}")
_IDENT_TAIL = frozenset("0123456789_")
_PATHISH = re.compile(r"^(?:[A-Za-z]:)?[\\/~.]|://")


@dataclass(frozen=True, eq=False)
class ProximityRule(Rule):
    """A value-like token within a few words after a credential word on the same line."""

    def gate(self) -> tuple[tuple[str, bool], ...]:
        return tuple((word, True) for word in _STRONG + _WEAK)

    def collect(self, scan_text: ScanText, out: Found) -> None:
        text, lowered = scan_text.text, scan_text.lowered
        seen: set[int] = set()
        for word in _STRONG + _WEAK:
            for hit in find_all(lowered, word):
                end = hit + len(word)
                suffixed = False
                if end < len(text) and text[end] == "_" and _left_bounded(text, hit):
                    # secret_key_base: only a direct, random-looking value counts
                    tail = _IDENT_REST.match(text, end)
                    end, suffixed = (tail.end() if tail else end), True
                elif not _word_bounded(text, hit, end):
                    continue
                if end in seen:
                    continue
                seen.add(end)
                candidate = self._after(text, end, strong=word in _STRONG, suffixed=suffixed)
                if candidate is not None:
                    add(out, candidate)

    def _after(self, text: str, start: int, *, strong: bool, suffixed: bool = False) -> Candidate | None:
        line_end = text.find("\n", start)
        limit = min(len(text), start + 120, line_end if line_end >= 0 else len(text))
        skipped = 0
        for match in _TOKEN.finditer(text, start, limit):
            token = match.group(0)
            if token.lower() in _GLUE or not any(c.isalnum() for c in token):
                continue
            if skipped >= 1 and not strong:
                return None
            value_start = match.start()
            name, eq, rest = token.partition("=")
            if eq and rest.strip("="):  # name=value inside one token: the value is what counts
                value_start += len(name) + 1
                token = rest
            value = token.rstrip(".,:!?") if match.end() == limit or text[match.end()].isspace() else token
            direct = skipped == 0 and _assigned(text, start, value_start)
            quoted = text[value_start - 1 : value_start] in ("'", '"', "`")
            if text[match.end() : match.end() + 1] == "(" or (_IDENTIFIER.match(value) and not quoted):
                return None  # a call or a code identifier (confirm_password, accessToken), not a value
            if suffixed or skipped >= 2:
                # far from the word, or after a longer identifier: only a clearly random value counts
                if (direct or not suffixed) and looks_like_secret(value, min_length=16, min_entropy=3.5):
                    return Candidate(value_start, value_start + len(value), self)
                if suffixed and direct and len(value) >= 32 and is_hash_like(value[:64]):
                    return Candidate(value_start, value_start + len(value), self)
                if suffixed:
                    return None
            elif _credential(value, strong=strong, direct=direct):
                return Candidate(value_start, value_start + len(value), self)
            skipped += 1
            if skipped >= (6 if strong else 2):
                return None
        return None


def _word_bounded(text: str, start: int, end: int) -> bool:
    """The credential word ends an identifier component (``db_password``, ``apiKey``) and is not inside a
    longer word (``monkey``, ``KeyError``, ``tokenizer``)."""
    if end < len(text) and ((text[end].isalpha() and not text[end].isupper()) or text[end] in _IDENT_TAIL):
        return False
    if end < len(text) and text[end].isupper() and text[start].islower():
        return False
    return _left_bounded(text, start)


def _left_bounded(text: str, start: int) -> bool:
    if start == 0:
        return True
    before = text[start - 1]
    return not before.isalpha() or (text[start].isupper() and before.islower())


def _assigned(text: str, keyword_end: int, value_start: int) -> bool:
    """The value follows the keyword through an operator only (``token=…``, ``"token": "…"``)."""
    between = text[keyword_end:value_start].strip(" \t\"'`]")
    return between in ("=", ":", ":=", "=>", "->", "==")


def _credential(value: str, *, strong: bool, direct: bool) -> bool:
    if len(value) < 6 or is_placeholder(value) or _PATHISH.search(value) or is_version(value):
        return False
    if is_reference(value) or value.startswith(("http", "-")):
        return False
    if is_hash_like(value) and not (strong and direct):
        return False
    if strong:
        classes = char_classes(value)
        if classes < 2:
            return direct and len(value) >= 12 and not value.isalpha()
        return len(value) >= 8 or classes >= 3 or any(c.isdigit() for c in value)
    return looks_like_secret(value, min_length=16, min_entropy=3.5)


def _not_placeholder(match: re.Match[str], _text: str) -> bool:
    return not is_placeholder(span_value(match))


_ALLOWED_HOSTS = frozenset(
    {"metadata.google.internal", "host.docker.internal", "gateway.docker.internal", "kubernetes.docker.internal",
     "host.containers.internal", "kubernetes.default.svc.cluster.local", "cluster.local", "svc.cluster.local",
     "localhost.localdomain", "localhost.local", "compute.internal", "ec2.internal"}
)  # fmt: skip
_HOST_SUFFIXES = (".internal", ".corp", ".local", ".lan", ".intranet", ".intra", ".home.arpa", ".localdomain")


def _internal_host(match: re.Match[str], text: str) -> bool:
    host = span_value(match).lower()
    if host in _ALLOWED_HOSTS:
        return False
    line_start = text.rfind("\n", 0, match.start()) + 1
    head = text[line_start : match.start()].lstrip()
    return not head.startswith(("import ", "from ")) and not text[match.end("s") : match.end("s") + 1] == "("


def _c(kind: str, label: str, category: str, pattern: str, validate, anchors, window, lower=True) -> Rule:
    return Rule(kind, category, label, re.compile(pattern), validate, 0.75, anchors, lower, window)  # type: ignore[arg-type]


CONTEXT_RULES: tuple[Rule, ...] = (
    _c(
        "url_credentials",
        "PASSWORD",
        "secret",
        r"(?<![\w+.-])[A-Za-z][A-Za-z0-9+.-]{1,30}://[^\s:/@'\"<>]*:(?P<s>[^\s/'\"<>@]+(?:@[^\s/'\"<>@]+)*)@(?=[\w.\[-])",
        _not_placeholder,
        ("://",),
        (34, 600),
    ),
    _c(
        "url_query_secret",
        "SECRET",
        "secret",
        r"[?&;#](?i:access_token|id_token|refresh_token|token|api_key|apikey|api-key|key|secret|client_secret|"
        r"password|passwd|pwd|sig|signature|auth|code|x-amz-signature|x-amz-credential|x-amz-security-token|"
        r"x-goog-signature|x-goog-credential)=(?P<s>[^&\s#\"'<>]{6,})",
        lambda m, t: _not_placeholder(m, t) and _credential(span_value(m), strong=True, direct=True),
        ("=",),
        (24, 2048),
    ),
    _c(
        "cli_credentials",
        "PASSWORD",
        "secret",
        r"(?:\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<s_p>[^\s-][^\s]*)"
        r"|\b(?:curl|wget|http)\b[^\n]*?\s(?:-u|--user)[ =]?[^\s:]+:(?P<s_u>[^\s@]+)"
        r"|\bsshpass\s+-p\s*[\"']?(?P<s_s>[^\s\"']+)"
        r"|\bredis-cli\b[^\n]*?\s-a\s+[\"']?(?P<s_r>[^\s\"']+))",
        _not_placeholder,
        ("mysql", "mariadb", "curl", "wget", "http", "sshpass", "redis-cli"),
        (0, 400),
    ),
    _c(
        "cookie_value",
        "SECRET",
        "secret",
        r"(?i:\bcookie:)[^\n]*?=(?P<s>[A-Za-z0-9%+/_.=-]{16,})",
        lambda m, _t: looks_like_secret(span_value(m), min_length=16, min_entropy=3.2),
        ("cookie:",),
        (0, 400),
    ),
    _c(
        "env_pair_value",
        "SECRET",
        "secret",
        r"(?i:name)[\"']?\s*[:=]\s*[\"']?[\w.-]*(?i:pass|passwd|password|pwd|secret|token|api_?key|credentials?)"
        r"[\"']?\s*[,\n]\s*(?:-\s*)?[\"']?(?i:value)[\"']?\s*[:=]\s*[\"']?(?P<s>[^\"'\s,}]+)",
        _not_placeholder,
        ("value",),
        (200, 200),
    ),
    _c(
        "internal_host",
        "INTERNAL_HOST",
        "internal",
        r"(?<![\w.-])(?P<s>(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
        r"(?i:internal|corp|local|lan|intranet|intra|home\.arpa|localdomain))(?![\w-]|\.[A-Za-z0-9])",
        _internal_host,
        _HOST_SUFFIXES,
        (128, 16),
    ),
    ProximityRule("near_keyword", "secret", "SECRET", re.compile("$^"), None, 0.7),
)


class ContextualSanitizer:
    """Offline contextual layer. ``disabled`` removes rules by kind (``{"internal_host"}``, say)."""

    name = "contextual"

    def __init__(self, *, disabled: frozenset[str] = frozenset()) -> None:
        self._ruleset = RuleSet([rule for rule in CONTEXT_RULES if rule.kind not in disabled])

    def sanitize_sync(self, text: str, *, placeholders: PlaceholderMap) -> SanitizedText:
        return redact(text, self._ruleset.find(text), placeholders, self.name)

    async def sanitize(self, text: str, *, kind: FieldKind, placeholders: PlaceholderMap) -> SanitizedText:
        """Redact what the words around a value show to be sensitive."""
        if len(text) > 256 * 1024:
            return await anyio.to_thread.run_sync(lambda: self.sanitize_sync(text, placeholders=placeholders))
        return self.sanitize_sync(text, placeholders=placeholders)
