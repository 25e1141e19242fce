"""Layer-1 rules for generic credential assignments: ``password=…``, ``api_key: …``, ``"secret": "…"``.

The key decides: it must *end* with a credential word (``DB_PASSWORD``, ``stripeApiKey``, ``X-Api-Key``,
``--token``), so ``password_hash`` or ``max_tokens`` do not count. The value must be a literal: quoted, or
a bare word that is not a reference (``api_key=api_key``, ``os.environ["X"]``, ``settings.SECRET``,
``None``), not a template (``${DB_PASSWORD}``, ``<password>``, ``changeme``) and, after a colon in running
prose (``Invalid password: too short``), shaped like a secret.

The scan is anchored on the credential word itself (a literal search in the lower-cased text); a hit that
no operator follows is dropped at once, otherwise the key is found by stripping key characters leftwards
(``str.rstrip``, in C) and the operator and value are matched right after the word. It stays linear in the
text: hits are taken in text order, the key characters left of a hit are read once (a hit in the same run
of key characters as the previous one reuses its start), a hit inside a value already matched is skipped,
and the operator-and-value pattern is matched at one place per hit and holds only bounded repetitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway_plugins.sanitizers.engine import CONTEXT, Candidate, Found, Rule, ScanText, add, find_all
from gateway_plugins.sanitizers.heuristics import char_classes, classes, is_placeholder, is_reference

__all__ = ["ASSIGNMENT_RULES", "AssignmentRule", "is_literal_secret"]

_PROSE_WORDS = frozenset(
    """the a an be is are was must should at least to of not no and or for with in on too invalid required
    missing expired incorrect wrong empty characters long short contain match matches provided""".split()
)
_KEY_QUALIFIERS = (
    "api", "access", "private", "secret", "signing", "encryption", "master", "client", "app", "auth", "license",
    "subscription", "account", "admin", "service", "webhook", "aws", "storage", "deploy", "ssh", "gpg", "sign",
)  # fmt: skip
_KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
_REDACTED = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
_MAX_KEY = 128
"""A key is read up to this many characters back from its credential word (no name is longer)."""
_OPERATOR_START = frozenset("\"']:=-> \t")
"""Characters that can follow a key when ``_OP_VALUE`` or ``_FLAG_VALUE`` matches right after it."""
_VALUE = (
    r"(?:\"(?P<dq>(?:[^\"\\\n]|\\.){1,500})\"|'(?P<sq>(?:[^'\\\n]|\\.){1,500})'|`(?P<bq>[^`\n]{1,500})`"
    r"|(?P<bare>[^\s\"'`,;&)}\]<>(\[]{1,500}))"
)
_OP_VALUE = re.compile(r"[\"']?\]?[ \t]{0,64}(?P<op>:=|=>|==|=|:|->)[ \t]{0,64}" + _VALUE)
_FLAG_VALUE = re.compile(r"(?P<op>[ \t]{1,64}|=)" + _VALUE)
_QUERY_PAIR = re.compile(r"&[A-Za-z_][\w.\[\]-]{0,64}=")
_BARE_MORE = re.compile(r"&[^\s\"'`,;&)}\]<>(\[]{1,500}")
BOUNDED_PATTERNS = (_OP_VALUE, _FLAG_VALUE, _QUERY_PAIR, _BARE_MORE)
"""The patterns this rule matches at a hit: every repetition in them is bounded (a test checks it)."""


def is_literal_secret(value: str, *, key: str, quoted: bool, strong: bool, after: str, password_key: bool) -> bool:
    """Whether ``value``, assigned to ``key``, is a literal credential worth redacting.

    ``strong`` is False for a colon in running prose (``Invalid password: too short``), where only values
    shaped like a secret count; ``after`` is the character following the value (``(`` means a call).
    """
    if is_placeholder(value) or _REDACTED.search(value):
        return False  # a template, or a value a layer already redacted (its PEM armour around <PRIVATE_KEY_1>)
    bare_key = key.lstrip("-")
    if bare_key.upper() in ("PWD", "OLDPWD") or (
        password_key and bare_key.lower().endswith("pwd") and value[:1] in "/~"
    ):
        return False  # the shell's working directory
    words = value.split()
    if len(words) >= 3 and any(w.lower().strip(".,:;!") in _PROSE_WORDS for w in words):
        return False  # a sentence: a validation message, not a value
    if not quoted:
        if after in ("(", "[", ".") or is_reference(value, bare_key):
            return False
        if not strong and not _secretish(value):
            return False
    if value.isdigit():
        return len(value) >= (4 if password_key else 8)
    return True


def _secretish(value: str) -> bool:
    if len(value) < 6:
        return False
    lower, _upper, digit, _other = classes(value)
    return digit or (lower and classes(value[1:])[1]) or char_classes(value) >= 3


def _key_start(text: str, end: int) -> int:
    """Where the run of key characters that ends at ``end`` starts."""
    step = 64
    while True:
        lo = max(0, end - step)
        kept = text[lo:end].rstrip(_KEY_CHARS)
        if kept or lo == 0:
            return lo + len(kept)
        end, step = lo, step * 4


class _KeyRuns:
    """:func:`_key_start` for hits in increasing order, reading each character left of a hit once: a hit in
    the same run of key characters as the previous one starts where it started."""

    __slots__ = ("_end", "_start", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._start = self._end = -1

    def start(self, end: int) -> int:
        text = self._text
        if 0 <= self._end <= end and not text[self._end : end].strip(_KEY_CHARS):
            start = self._start
        else:
            start = _key_start(text, end) if self._end < 0 else _key_start_from(text, end, self._end)
        self._start, self._end = start, end
        return start


def _key_start_from(text: str, end: int, floor: int) -> int:
    """:func:`_key_start`, knowing that a non-key character lies in ``text[floor:end]``."""
    kept = text[floor:end].rstrip(_KEY_CHARS)
    return floor + len(kept)


def _structured_key(text: str, key_start: int, key_end: int) -> bool:
    """YAML/INI/.env style (the key opens its line) or a quoted JSON key, rather than running prose."""
    opener = text[key_start - 1 : key_start]
    if opener in ('"', "'") and text[key_end : key_end + 1] == opener:
        return True
    line_start = text.rfind("\n", max(0, key_start - CONTEXT), key_start) + 1  # a longer head is prose anyway
    head = text[max(line_start, key_start - CONTEXT) : key_start].strip()
    return head in ("", "-", "#", "export", "set", "ENV", "env", "{", "[")


@dataclass(frozen=True, eq=False)
class AssignmentRule(Rule):
    """A credential-word key followed by an assignment operator and a literal value."""

    words: tuple[str, ...] = ()
    password_key: bool = False

    def gate(self) -> tuple[tuple[str, bool], ...]:
        return tuple((word, True) for word in self.words)

    def _key_ok(self, key: str, word: str) -> bool:
        prefix = key[: -len(word)].rstrip("_.-")
        if word in ("pwd", "pass"):
            return prefix == "" or key[-len(word) - 1] in "_.-"
        if word == "key":
            return prefix.endswith(_KEY_QUALIFIERS)
        return True

    def collect(self, scan_text: ScanText, out: Found) -> None:
        text, lowered = scan_text.text, scan_text.lowered
        hits = sorted((hit, word) for word in self.words for hit in find_all(lowered, word))
        seen: set[int] = set()
        runs = _KeyRuns(text)
        consumed = 0  # the end of the last value matched: a hit before it is inside that value
        for hit, word in hits:
            word_end = hit + len(word)
            if hit < consumed or word_end in seen or text[word_end : word_end + 1] not in _OPERATOR_START:
                continue  # inside a value, inside a longer word (keyboard), or no operator can follow (KeyError)
            key_start = max(runs.start(hit), word_end - _MAX_KEY)
            key = text[key_start:word_end]
            if not self._key_ok(key.lower().lstrip("-"), word):
                continue
            seen.add(word_end)
            matched, candidate = self._value(text, key_start, word_end, key, out)
            consumed = max(consumed, matched)
            if candidate is not None:
                add(out, candidate)

    def _value(self, text: str, key_start: int, key_end: int, key: str, found: Found) -> tuple[int, Candidate | None]:
        """Where the operator and value after the key end (``key_end`` when there are none), and the
        value's candidate if it is a literal credential."""
        match = _OP_VALUE.match(text, key_end)
        if match is None and key.startswith("-"):
            match = _FLAG_VALUE.match(text, key_end)  # --password hunter2
        if match is None:
            return key_end, None
        group = next(g for g in ("dq", "sq", "bq", "bare") if match.group(g) is not None)
        if (match.start(group), match.end(group)) in found:
            return match.end(), None  # an earlier rule already has this exact value (a provider key)
        start, end = match.start(group), match.end(group)
        quoted = group != "bare"
        if not quoted:
            end = _through_ampersands(text, end)
        value = text[start:end]
        op = match.group("op")
        strong = op != ":" or quoted or _structured_key(text, key_start, key_end)
        after = text[end : end + 1]
        if not is_literal_secret(
            value, key=key, quoted=quoted, strong=strong, after=after, password_key=self.password_key
        ):
            return max(match.end(), end), None
        return max(match.end(), end), Candidate(start, end, self)


def _through_ampersands(text: str, end: int) -> int:
    """A bare value ends at ``&`` only before another ``key=`` (a query string's next pair): ``Tr0ub4dor&3xq`` is
    one password, ``password=x&user=y`` two values."""
    while text.startswith("&", end) and _QUERY_PAIR.match(text, end) is None:
        more = _BARE_MORE.match(text, end)
        if more is None:
            break
        end = more.end()
    return end


def _assignment_rule(kind: str, label: str, words: tuple[str, ...], password_key: bool) -> AssignmentRule:
    return AssignmentRule(kind, "secret", label, "", None, 0.8, words=words, password_key=password_key)


ASSIGNMENT_RULES: tuple[Rule, ...] = (
    _assignment_rule("password_assignment", "PASSWORD", ("password", "passwd", "passphrase", "pwd", "pass"), True),
    _assignment_rule("secret_assignment", "SECRET", ("secret", "token", "key", "credentials", "credential"), False),
)
