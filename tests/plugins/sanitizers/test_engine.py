"""The rule engine: RE2 rules, the gate, bounded views, overlap resolution.

The gate is checked against running every rule, on generated texts made of the fragments the rules look
for and on the corpus; the case folding against ``re.IGNORECASE``; the resolution of overlaps on the cases
that used to leave half a secret in clear.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import re2
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gateway.api import PlaceholderMap
from gateway_plugins.sanitizers.contextual import CONTEXT_RULES
from gateway_plugins.sanitizers.engine import CONTEXT, Candidate, Found, Rule, RuleSet, ScanText, View, find_all, fold
from gateway_plugins.sanitizers.engine import select as resolve
from gateway_plugins.sanitizers.patterns import DEFAULT_RULES, PatternSanitizer

FRAGMENTS = [
    # numbers, addresses, phones, cards
    "1", "12", "255", "256", "34", "120", "5", "17", "0", ".", ":", "::", "beef", "2a00", "1450", "+", "+1 ",
    "120.5.17.34", "10.0.3.12", "1.26.4.0", "2a00:1450:4001:82b::200e", "fe80::1", "12:30:45",
    "(415) ", "555-0132", "4111 1111 1111 1111", "4111", "-", " ", "\n", "v", "=", "/", "//", "@",
    # URLs, e-mails, paths, hosts
    "://", "http", "https", "postgres", "jdbc:mysql", "mongodb+srv", "user", ":p4ss", "S3cr3t", "@db.acme.io",
    "alice", ".smith", "acme-corp.io", "example.com", "/home/", "C:\\Users\\", "bob", "Documents and Settings",
    "/srv/app/", "site-packages/", "node_modules/", ".py", "db01.", ".internal", "corp.", "Server=",
    # credential words and tokens
    "password", "PASSWORD", "passwd", "pwd", "token", "api_key", "apiKey", "secret", "credentials", "KeyError",
    "Bearer ", "bearer ", "Basic ", "dXNlcjpwYXNzd29yZA==", "_authToken", "sig=", "AccountKey=", "storage",
    "sk-", "sk-ant-api03-", "sk_live_", "ghp_", "glpat-", "xoxb-", "AKIA", "ASIA", "AIza", "eyJ", "eyA",
    "hf_", "npm_", "SG.", "SK", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789", "abcdefghij", "ABCDEFGHIJKLMNOP", "=", '"', "'", "`",
    "phone: ", "tel ", "call me at ", "contact", "x", "\u0130", "\u0131", "\u017f", "\u212a", "é", "\ud800",
]  # fmt: skip
# A few fragments, repeated and mixed with arbitrary text: dense enough to meet the rules' edge cases.
texts = st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6, unique=True).flatmap(
    lambda pool: st.lists(st.one_of(st.sampled_from(pool), st.text(max_size=3)), max_size=30).map("".join)
)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CORPUS = Path(__file__).parents[2] / "data" / "sanitizer_corpus"
RECORDS = [
    json.loads(line)["text"]
    for name in ("corpus.jsonl", "hard_cases.jsonl")
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()
    if line
]


def spans(candidates: list[Candidate]) -> list[tuple[int, int, str]]:
    return sorted((c.start, c.end, c.rule.kind) for c in candidates)


def ungated(rules: tuple[Rule, ...], text: str) -> list[Candidate]:
    """Every rule run on the text, no gate: what :meth:`RuleSet.scan` must find."""
    scan_text, found = ScanText(text), Found()
    for rule in rules:
        rule.collect(scan_text, found)
    return list(found.values())


@pytest.mark.parametrize("rules", [DEFAULT_RULES, CONTEXT_RULES], ids=["patterns", "contextual"])
@SETTINGS
@given(text=texts)
@example("4\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 or -\u0661\u0662\u0663\u0664")  # digits to re, not to RE2
@example("\ud800 DB_PASSWORD=hunter22 from 34.120.5.17")  # a lone surrogate: not UTF-8
@example("caf\u00e9 +1 (415) 555-0132, 10.0.0.1.5")
def test_the_gate_skips_only_rules_that_cannot_match(rules: tuple[Rule, ...], text: str) -> None:
    ruleset = RuleSet(rules)
    assert spans(ruleset.scan(text)) == spans(ungated(ruleset.rules, text))


@pytest.mark.parametrize("rules", [DEFAULT_RULES, CONTEXT_RULES], ids=["patterns", "contextual"])
def test_the_gate_skips_only_rules_that_cannot_match_on_the_corpus(rules: tuple[Rule, ...]) -> None:
    ruleset = RuleSet(rules)
    joined = "\n".join(RECORDS[:400])
    for text in [*RECORDS, joined]:
        assert spans(ruleset.scan(text)) == spans(ungated(ruleset.rules, text)), text


class _GaveUp:
    """What an ``re2.Set`` answers when its DFA runs out of memory: no match at all, not even the sentinel."""

    def Match(self, _text: object) -> list[int]:
        return []


def test_a_gate_that_gives_up_lets_every_rule_run() -> None:
    ruleset = RuleSet(DEFAULT_RULES)
    text = "nothing to see here"
    assert len(ruleset.gate.rules_for(ScanText(text))) < len(DEFAULT_RULES)
    ruleset.gate._text._set = _GaveUp()
    assert ruleset.gate.rules_for(ScanText(text)) == list(range(len(DEFAULT_RULES)))
    assert PatternSanitizer().redact("AKIAQ3EXAMPL2Z7K4M5N") == "<AWS_KEY_1>"


def _regexes_of(pattern: re.Pattern[str]) -> list[tuple[int, int]]:
    """The (min, max) of every repetition in a Python regex, nested ones included."""
    from re import _parser  # type: ignore[attr-defined]

    found: list[tuple[int, int]] = []

    def walk(items: object) -> None:
        for op, arg in items:  # type: ignore[attr-defined]
            if op in (_parser.MAX_REPEAT, _parser.MIN_REPEAT, _parser.POSSESSIVE_REPEAT):
                found.append((arg[0], arg[1]))
                walk(arg[2])
            elif op in (_parser.SUBPATTERN, _parser.ATOMIC_GROUP):
                walk(arg[-1])
            elif op == _parser.BRANCH:
                for branch in arg[1]:
                    walk(branch)
            elif op in (_parser.ASSERT, _parser.ASSERT_NOT):
                walk(arg[1])

    walk(_parser.parse(pattern.pattern, pattern.flags))
    return found


def test_every_rule_pattern_is_an_re2_expression() -> None:
    # RE2 matches in time linear in the text, for any pattern and any input: no rule can backtrack.
    for rule in DEFAULT_RULES + CONTEXT_RULES:
        if rule.pattern:
            assert isinstance(rule.regex, re2._Regexp), rule.kind
            assert re2.compile(rule.pattern).pattern == rule.pattern
        if rule.probe:
            re2.compile(rule.probe)


def test_rules_without_a_pattern_match_only_bounded_repetitions() -> None:
    # The assignment and proximity rules match Python regexes at each hit: with every repetition bounded,
    # a match reads a bounded number of characters, whatever the text.
    from gateway_plugins.sanitizers import contextual, rules_assign

    custom = [rule for rule in DEFAULT_RULES + CONTEXT_RULES if not rule.pattern]
    assert {rule.kind for rule in custom} == {"password_assignment", "secret_assignment", "near_keyword"}
    for pattern in (*rules_assign.BOUNDED_PATTERNS, *contextual.BOUNDED_PATTERNS):
        assert all(high != re._constants.MAXREPEAT for _low, high in _regexes_of(pattern)), pattern.pattern  # type: ignore[attr-defined]


def test_a_view_shows_at_most_the_context_around_a_match() -> None:
    text = "x" * 1000 + "SECRET" + "y" * 1000
    view = View(text, None, 1000, 1006)
    assert view.value == "SECRET"
    assert view.before(10_000) == "x" * CONTEXT and view.after(10_000) == "y" * CONTEXT
    assert view.line_before() == "x" * CONTEXT


@SETTINGS
@given(text=st.text(alphabet=st.sampled_from("aKkSsIi\u0131\u0130\u017f\u212aé-_ ."), max_size=30))
def test_fold_keeps_offsets_and_finds_what_ignorecase_finds(text: str) -> None:
    folded = fold(text)
    assert len(folded) == len(text)
    for literal in ("k", "s", "i", "ski", "kiss"):
        expected = [m.start() for m in re.finditer(re.escape(literal), text, re.IGNORECASE)]
        assert find_all(folded, literal) == expected


def test_a_dotted_capital_i_no_longer_hides_credentials() -> None:
    # str.lower() turns U+0130 into two characters; the old engine then searched its credential words
    # case-sensitively, and PASSWORD= went unseen.
    assert "Summer2024!" not in PatternSanitizer().redact('\u0130stanbul DB_PASSWORD="Summer2024!"')


def test_offsets_are_characters_in_non_ascii_and_surrogate_texts() -> None:
    for text in ("café → mail alice@acme-corp.io", "\ud800 mail alice@acme-corp.io", "日本語 alice@acme-corp.io"):
        (finding,) = PatternSanitizer().sanitize_sync(text, placeholders=PlaceholderMap()).findings
        assert text[finding.start : finding.end] == "alice@acme-corp.io"


def test_a_span_an_earlier_rule_found_is_not_validated_again() -> None:
    calls: list[str] = []

    def counting(view: View) -> bool:
        calls.append(view.value)
        return True

    first = Rule("first", "secret", "FIRST", r"tok3n\w+", requires=("tok3n",))
    second = Rule("second", "secret", "SECOND", r"tok3n\w+", counting, requires=("tok3n",))
    assert [c.rule.kind for c in RuleSet([first, second]).find("a tok3nAbc b")] == ["first"]
    assert calls == []
    assert [c.rule.kind for c in RuleSet([second, first]).find("a tok3nAbc b")] == ["second"]
    assert calls == ["tok3nAbc"]


SECRET = Rule("secret_rule", "secret", "SECRET", "x")
EMAIL = Rule("email_rule", "pii", "EMAIL", "x")
PATH = Rule("path_rule", "internal", "PATH", "x")
ORDER = {SECRET: 0, EMAIL: 1, PATH: 2}


def test_overlapping_candidates_are_redacted_as_their_union() -> None:
    # postgresql://admin:Tr0ub4dor&3xyz@db01…: a password [19, 33) and an e-mail-shaped [29, 52)
    chosen = resolve([Candidate(29, 52, EMAIL), Candidate(19, 33, SECRET)], ORDER)
    assert [(c.start, c.end, c.rule.kind) for c in chosen] == [(19, 52, "secret_rule")]


def _resolved(*candidates: Candidate) -> list[tuple[int, int, str]]:
    return [(c.start, c.end, c.rule.kind) for c in resolve(list(candidates), ORDER)]


def test_a_longer_span_containing_another_names_the_redaction_unless_that_one_is_a_secret() -> None:
    assert _resolved(Candidate(0, 30, PATH), Candidate(5, 9, EMAIL)) == [(0, 30, "path_rule")]
    assert _resolved(Candidate(0, 30, PATH), Candidate(5, 9, SECRET)) == [(0, 30, "secret_rule")]


def test_disjoint_and_touching_candidates_stay_apart() -> None:
    chosen = resolve([Candidate(10, 20, PATH), Candidate(0, 10, EMAIL), Candidate(25, 30, SECRET)], ORDER)
    assert [(c.start, c.end) for c in chosen] == [(0, 10), (10, 20), (25, 30)]


PATTERNED = [rule for rule in DEFAULT_RULES + CONTEXT_RULES if rule.pattern]


@SETTINGS
@given(text=texts.filter(lambda t: not any(ch in t for ch in "\u017f\u212a\ud800")))
@example("café alice@acme-corp.io → /srv/app/x.py 10.1.2.3 ﬁle:Tr0ub4dor&3xyz@db01.corp.internal")
@example("日本語 postgresql://admin:pässwörd@db01.corp.internal:5432 ключ: Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123")
def test_a_non_ascii_text_is_read_as_ascii_stand_ins_with_the_same_matches(text: str) -> None:
    # RE2 reads every rule pattern with ASCII classes: a non-ASCII character matches what DEL matches.
    subject = ScanText(text).subject
    for rule in PATTERNED:
        assert [m.span() for m in rule.regex.finditer(subject)] == [m.span() for m in rule.regex.finditer(text)]
