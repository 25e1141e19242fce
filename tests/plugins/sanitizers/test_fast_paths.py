"""Layer 1's fast rewrites answer exactly what their plain forms answer.

Each rewrite (a key found by ``str.rstrip`` and reused along a run of key characters, a validator made of
C-level string operations, an early exit) is checked against the plain version it replaced, kept here as
the reference.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gateway_plugins.sanitizers import heuristics
from gateway_plugins.sanitizers.engine import Candidate, Found, ScanText
from gateway_plugins.sanitizers.patterns import DEFAULT_RULES
from gateway_plugins.sanitizers.rules_assign import _KEY_CHARS, _MAX_KEY, AssignmentRule, _key_start, _KeyRuns

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def made_of(*fragments: str, size: int = 25) -> st.SearchStrategy[str]:
    pool = st.sampled_from(fragments)
    return st.lists(st.one_of(pool, pool, st.text(max_size=2)), max_size=size).map("".join)


class PlainAssignmentRule(AssignmentRule):
    """The assignment scan written plainly: every hit in text order, a character-by-character walk for the
    key, no early operator check; a hit inside a value already matched is skipped (the rule's definition)."""

    def collect(self, scan_text: ScanText, out: Found) -> None:
        text, lowered = scan_text.text, scan_text.lowered
        hits = sorted((m.start(), word) for word in self.words for m in re.finditer(re.escape(word), lowered))
        seen: set[int] = set()
        consumed = 0
        for hit, word in hits:
            word_end = hit + len(word)
            if hit < consumed or word_end in seen or (word_end < len(text) and text[word_end].isalnum()):
                continue
            key_start = hit
            while key_start > 0 and text[key_start - 1] in _KEY_CHARS:
                key_start -= 1
            key_start = max(key_start, word_end - _MAX_KEY)
            key = text[key_start:word_end]
            if not self._key_ok(key.lower().lstrip("-"), word):
                continue
            seen.add(word_end)
            matched, candidate = self._value(text, key_start, word_end, key, {})
            consumed = max(consumed, matched)
            if candidate is not None:
                out.setdefault((candidate.start, candidate.end), candidate)


ASSIGNMENTS = [rule for rule in DEFAULT_RULES if isinstance(rule, AssignmentRule)]


def spans(found: Found) -> list[tuple[int, int]]:
    return sorted(found)


@SETTINGS
@given(
    text=made_of(
        "DB_", "password", "PASSWORD", "passwd", "pwd", "pass", "api_", "key", "Key", "token", "secret", "--",
        "credentials", "=", ":", ":=", "=>", "->", "==", " ", "\t", '"', "'", "`", "]", "hunter22", "S3cr3t!x",
        "os.environ", "(", ".", "-", "_", "\n", "KeyError", "monkey", "é",
    )
)  # fmt: skip
def test_the_assignment_scan_finds_what_the_plain_walk_finds(text: str) -> None:
    for rule in ASSIGNMENTS:
        plain = PlainAssignmentRule(
            rule.kind, rule.category, rule.label, "", None, rule.confidence,
            words=rule.words, password_key=rule.password_key,
        )  # fmt: skip
        fast_found: dict[tuple[int, int], Candidate] = {}
        plain_found: dict[tuple[int, int], Candidate] = {}
        rule.collect(ScanText(text), fast_found)
        plain.collect(ScanText(text), plain_found)
        assert spans(fast_found) == spans(plain_found)


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from(_KEY_CHARS + " =\n\u00e9"), max_size=300), end=st.integers(0, 300))
def test_the_key_start_is_where_the_key_characters_begin(text: str, end: int) -> None:
    end = min(end, len(text))
    start = end
    while start > 0 and text[start - 1] in _KEY_CHARS:
        start -= 1
    assert _key_start(text, end) == start


@SETTINGS
@given(
    text=st.text(alphabet=st.sampled_from("ab_-. =\n"), max_size=300),
    ends=st.lists(st.integers(0, 300), max_size=20),
)
def test_key_runs_reuse_the_start_of_the_run_a_hit_is_in(text: str, ends: list[int]) -> None:
    runs = _KeyRuns(text)
    for end in sorted(min(e, len(text)) for e in ends):
        assert runs.start(end) == _key_start(text, end)


VALUES = st.one_of(
    st.text(max_size=40),
    made_of(
        "*", "x", "X", "•", "#", ".", "****", "xxxx", "abc", "sk-", "AKIA", "1234", "\n", "\u00a0", " ", "-", "_",
        "your", "here", "changeme", "placeholder", "fake", "dummy", "insert", "replaceme", "api", "Key", '"', "'",
        "`", "Q", "zz", "none", "Example", "\u0130", "\u03a3", "K", "<", ">", "${", "}", "...",
        size=14,
    ),
)  # fmt: skip


def plain_is_placeholder(value: str) -> bool:
    v = value.strip().strip("\"'`")
    if len(v) < 3:
        return True
    lower = v.lower()
    distinct = len(set(lower))
    if distinct == 1 or (distinct == 2 and len(lower) >= 6) or "example" in lower:
        return True
    if lower in heuristics._PLACEHOLDER_VALUES:
        return True
    if heuristics._TEMPLATE.match(v) or heuristics._MASK.match(v) or v.endswith(("...", "\u2026")):
        return True
    joined = heuristics._SEPARATORS.sub("", lower)
    if joined.startswith(heuristics._JOINED_PREFIXES) or joined.endswith(heuristics._JOINED_SUFFIXES):
        return True
    return any(part.lower() in heuristics._PLACEHOLDER_WORDS for part in heuristics._SPLIT.split(v) if part)


@SETTINGS
@given(value=VALUES)
@example("abcsk-xxxx1234")  # a mask that does not reach index 12
@example("sk-*****abcdef")
@example("prefix123456****ab")
@example("prefix12345****abcdef\n")  # 20 characters, the last a newline ``$`` may precede
@example("prefix12345****abcdef")
@example('"abcdefgh****abcdef\n"')  # 19 characters once unquoted: the run ends just before index 12
@example('" yourapikey1"')
@example('" your-api-key"')  # white space left inside the quotes
@example("'\tapi_key_here '")
@example("ababa")  # two characters, too short
@example("ababab")
@example("a-a-a-a")
def test_the_placeholder_check_answers_as_the_plain_one(value: str) -> None:
    assert heuristics.is_placeholder(value) == plain_is_placeholder(value)


@SETTINGS
@given(value=VALUES)
def test_character_classes_are_those_of_each_character(value: str) -> None:
    lower, upper, digit, other = heuristics.classes(value)
    assert lower == any(c.islower() for c in value)
    assert upper == any(c.isupper() for c in value)
    assert digit == any(c.isdigit() for c in value)
    assert other == any(not (c.islower() or c.isupper() or c.isdigit()) for c in value)


@SETTINGS
@given(value=VALUES)
def test_the_entropy_is_the_same_float(value: str) -> None:
    plain = -sum(n / len(value) * math.log2(n / len(value)) for n in Counter(value).values()) if value else 0.0
    assert heuristics.shannon_entropy(value) == plain
