"""Layer 2, ``contextual``: what regexes for known formats miss, found from the words around it.

Offline and deterministic (the default second layer when no LLM is configured). It catches

* random-looking values near credential words, also in prose and CLI flags
  (``the admin password is Tr0ub4dor&3``, ``--token 7f3a…``, ``mysql -pS3cret``);
* credentials in query strings, command lines and cookies (``?access_token=``, ``X-Amz-Signature=``,
  ``curl -u user:pass``, ``Cookie: sessionid=…``).

Credentials in URL authorities and internal host names are layer 1's (``patterns``), which resolves them in
the same pass as e-mails and paths.

Its filters keep what only *looks* random: hashes, UUIDs and git SHAs (unless directly assigned to a strong
credential word: a UUID that *is* the ``api_token`` is a secret), version strings, paths, URLs, identifiers
and template placeholders (``your-api-key-here``, ``<TOKEN>``, ``${API_KEY}``, ``xxx``, ``changeme``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import anyio

from gateway.api import FieldKind, PlaceholderMap, SanitizedText
from gateway_plugins.sanitizers.engine import (
    Candidate,
    Found,
    Rule,
    RuleSet,
    ScanText,
    Validator,
    View,
    add,
    find_all,
    redact,
)
from gateway_plugins.sanitizers.heuristics import (
    char_classes,
    is_hash_like,
    is_placeholder,
    is_reference,
    is_version,
    looks_like_secret,
)
from gateway_plugins.sanitizers.rules_secrets import not_placeholder

__all__ = ["CONTEXT_RULES", "ContextualSanitizer"]

_STRONG = ("password", "passwd", "passphrase", "passcode", "pwd", "secret", "token", "apikey", "credential",
           "credentials")  # fmt: skip
_WEAK = ("key", "auth", "signature", "sig", "session", "cookie")
_GLUE = frozenset(
    """is was are be = : := => -> to of as the my our your new set using with value was: is: now here it
    for this that reset changed updated - -- ' " ` ( [ { , ;""".split()
)
_TOKEN = re.compile(r"[^\s\"'`,;(){}\[\]<>&=](?:[^\s\"'`,;(){}\[\]<>&]|&(?!\w{1,64}=)){0,255}")
_IDENTIFIER = re.compile(
    r"^(?:[a-z]+(?:[_-][a-z]+)+|[a-z]+(?:[A-Z][a-z]+)+|[A-Z][a-z]+(?:[A-Z][a-z]+)+|[A-Z]+(?:_[A-Z]+)+)$"
)
_IDENT_REST = re.compile(r"[A-Za-z0-9_]{1,40}")
_IDENT_TAIL = frozenset("0123456789_")
BOUNDED_PATTERNS = (_TOKEN, _IDENT_REST)
"""The patterns the proximity rule matches at each hit: every repetition in them is bounded (a test checks
it), and they run within ``_REACH`` characters of the hit."""
_KEYWORDS = frozenset(_STRONG + _WEAK)
_WEAK_SET = frozenset(_WEAK)
_TRIM = "\"'`:=,;.()[]{}<>-"
_REACH = 120
"""How far after a credential word a value is looked for (and never past the end of its line)."""
_PATHISH = re.compile(r"^(?:[A-Za-z]:)?[\\/~.]|://")


@dataclass(frozen=True, eq=False)
class ProximityRule(Rule):
    """A value-like token within a few words after a credential word on the same line.

    Linear in the text: each hit reads at most ``_REACH`` characters, and a hit stops at the next credential
    word at least as strong as its own (that word's hit reads on from there), so a run of credential words
    does not make every hit read the same window.
    """

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
        line_end = text.find("\n", start, start + _REACH)
        limit = min(len(text), start + _REACH) if line_end < 0 else line_end
        skipped = 0
        for match in _TOKEN.finditer(text, start, limit):
            token = match.group(0)
            if text[match.start() - 1 : match.start()] == "<" and text[match.end() : match.end() + 1] == ">":
                return None  # <SLACK_TOKEN_1>: the value was redacted already
            bare = token.lower().strip(_TRIM)
            if bare in _KEYWORDS and (strong or bare in _WEAK_SET):
                return None  # that credential word's own hit reads on from here
            if token.lower() in _GLUE or bare in _KEYWORDS or not any(c.isalnum() for c in token):
                continue
            if skipped >= 1 and not strong:
                return None
            value_start = match.start()
            name, eq, rest = token.partition("=")
            if eq and rest.strip("="):  # name=value inside one token: the value is what counts
                keyword = _trailing_keyword(name.strip(_TRIM))
                if keyword is not None and (strong or keyword in _WEAK_SET):
                    return None  # api_key=…: that word's own hit reads its value
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


def _trailing_keyword(name: str) -> str | None:
    """The credential word ``name`` ends with as an identifier component (``api_key``, ``dbPassword``)."""
    lowered = name.lower()
    for keyword in _KEYWORDS:
        if lowered.endswith(keyword) and _left_bounded(name, len(name) - len(keyword)):
            return keyword
    return None


def _word_bounded(text: str, start: int, end: int) -> bool:
    """The credential word ends an identifier component (``db_password``, ``apiKey``) and is not inside a
    longer word (``monkey``, ``KeyError``, ``tokenizer``, ``AuthService``)."""
    if end < len(text) and (text[end].isalpha() or text[end] in _IDENT_TAIL):
        return False  # tokenizer, token2, AuthService, KeyError, APIKEYS: the word goes on
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


def _query_secret(view: View) -> bool:
    return not_placeholder(view) and _credential(view.value, strong=True, direct=True)


def _password_like(view: View) -> bool:
    """Not a placeholder, nor a plain lowercase word (``htpasswd -b is insecure because...``)."""
    word = view.value.rstrip(":,.;)")
    return not_placeholder(view) and not (word.isalpha() and word.islower())


def _cookie(view: View) -> bool:
    return looks_like_secret(view.value, min_length=16, min_entropy=3.2)


def _c(kind: str, label: str, pattern: str, validate: Validator, requires: tuple[str, ...]) -> Rule:
    return Rule(kind, "secret", label, pattern, validate, 0.75, requires, True)


CONTEXT_RULES: tuple[Rule, ...] = (
    _c(
        "url_query_secret",
        "SECRET",
        r"[?&;#](?i:access_token|id_token|refresh_token|token|api_key|apikey|api-key|key|secret|client_secret|"
        r"password|passwd|pwd|sig|signature|auth|code|x-amz-signature|x-amz-credential|x-amz-security-token|"
        r"x-goog-signature|x-goog-credential)=(?P<s>[^&\s#\"'<>]{6,})",
        _query_secret,
        ("=",),
    ),
    _c(
        "cli_credentials",
        "PASSWORD",
        r"(?:\b(?:mysql|mysqldump|mysqladmin|mariadb)\b[^\n]*?\s-p(?P<s_p>[^\s-][^\s]*)"
        r"|\b(?:curl|wget|http)\b[^\n]*?\s(?:-u|--user)[ =]?[^\s:]+:(?P<s_u>[^\s@]+)"
        r"|\bsshpass\s+-p\s*[\"']?(?P<s_s>[^\s\"']+)"
        r"|\bredis-cli\b[^\n]*?\s-a\s+[\"']?(?P<s_r>[^\s\"']+))",
        not_placeholder,
        ("mysql", "mariadb", "curl", "wget", "http", "sshpass", "redis-cli"),
    ),
    _c(  # a looser shape (a password's place among positional arguments): prose words are not taken for one
        "cli_passwords",
        "PASSWORD",
        r"(?:\bdocker\s+login\b[^\n]*?\s(?:-p|--password)[ =][\"']?(?P<s_d>[^\s\"']+)"
        r"|\bhtpasswd\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*b[a-zA-Z]*\s+(?:-[a-zA-Z]+\s+)*(?:\S+\s+)?\S+\s+[\"']?(?P<s_h>[^\s\"')]+)"
        r"|\s-(?:src|dest)?(?:store|key)pass\s+[\"']?(?P<s_k>[^\s\"']+))",  # keytool, jarsigner
        _password_like,
        ("docker", "htpasswd", "storepass", "keypass"),
    ),
    _c(
        "cookie_value",
        "SECRET",
        r"(?i:\bcookie:)[^\n]*?=(?P<s>[A-Za-z0-9%+/_.=-]{16,})",
        _cookie,
        ("cookie:",),
    ),
    _c(
        "env_pair_value",
        "SECRET",
        r"(?i:name)[\"']?\s*[:=]\s*[\"']?[\w.-]*(?i:pass|passwd|password|pwd|secret|token|api_?key|credentials?)"
        r"[\"']?\s*[,\n]\s*(?:-\s*)?[\"']?(?i:value)[\"']?\s*[:=]\s*[\"']?(?P<s>[^\"'\s,}]+)",
        not_placeholder,
        ("value",),
    ),
    ProximityRule("near_keyword", "secret", "SECRET", "", None, 0.7),
)


class ContextualSanitizer:
    """Offline contextual layer. ``disabled`` removes rules by kind (``{"cookie_value"}``, say)."""

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
