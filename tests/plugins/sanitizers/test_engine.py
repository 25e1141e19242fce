"""The rule engine's shortcuts change nothing but speed.

Each shortcut is checked against the plain way it replaces, on generated texts made of the fragments the
rules look for: the gate (which rules run) against running every rule, an ``anchored`` rule (matched at each
anchor hit) against the same rule searched across its windows, the two gates against each other, and the
case folding against ``re.IGNORECASE``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gateway_plugins.sanitizers.contextual import CONTEXT_RULES
from gateway_plugins.sanitizers.engine import Candidate, Found, Rule, RuleSet, ScanText, find_all, fold
from gateway_plugins.sanitizers.gate import PythonGate, Re2Gate
from gateway_plugins.sanitizers.patterns import DEFAULT_RULES, PatternSanitizer

FRAGMENTS = [
    # numbers, addresses, phones, cards
    "1", "12", "255", "256", "34", "120", "5", "17", "0", ".", ":", "::", "beef", "2a00", "1450", "+", "+1 ",
    "120.5.17.34", "10.0.3.12", "1.26.4.0", "2a00:1450:4001:82b::200e", "fe80::1", "12:30:45",
    "(415) ", "555-0132", "4111 1111 1111 1111", "4111", "-", " ", "\n", "v", "=", "/", "//", "@",
    # URLs, e-mails, paths
    "://", "http", "https", "postgres", "jdbc:mysql", "mongodb+srv", "user", ":p4ss", "S3cr3t", "@db.acme.io",
    "alice", ".smith", "acme-corp.io", "example.com", "/home/", "C:\\Users\\", "bob", "Documents and Settings",
    # credential words and tokens
    "password", "PASSWORD", "passwd", "pwd", "token", "api_key", "apiKey", "secret", "credentials", "KeyError",
    "Bearer ", "bearer ", "Basic ", "dXNlcjpwYXNzd29yZA==", "_authToken", "sig=", "AccountKey=", "storage",
    "sk-", "sk-ant-api03-", "sk_live_", "ghp_", "glpat-", "xoxb-", "AKIA", "ASIA", "AIza", "eyJ", "eyA",
    "hf_", "npm_", "SG.", "SK", "-----BEGIN RSA PRIVATE KEY-----", "-----END RSA PRIVATE KEY-----",
    "Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789", "abcdefghij", "ABCDEFGHIJKLMNOP", "=", '"', "'", "`",
    "phone: ", "tel ", "call me at ", "contact", "x", "\u0130", "\u0131", "\u017f", "\u212a", "é",
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


GATES = [
    PythonGate,
    pytest.param(Re2Gate, marks=pytest.mark.skipif(not Re2Gate.available(), reason="google-re2 is not installed")),
]


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("rules", [DEFAULT_RULES, CONTEXT_RULES], ids=["patterns", "contextual"])
@SETTINGS
@given(text=texts)
def test_the_gate_skips_only_rules_that_cannot_match(gate, rules: tuple[Rule, ...], text: str) -> None:
    ruleset = RuleSet(rules, gate=gate)
    assert spans(ruleset.scan(text)) == spans(ungated(ruleset.rules, text))


@pytest.mark.parametrize("gate", GATES)
@pytest.mark.parametrize("rules", [DEFAULT_RULES, CONTEXT_RULES], ids=["patterns", "contextual"])
def test_the_gate_skips_only_rules_that_cannot_match_on_the_corpus(gate, rules: tuple[Rule, ...]) -> None:
    ruleset = RuleSet(rules, gate=gate)
    joined = "\n".join(RECORDS)
    for text in [*RECORDS, joined]:
        assert spans(ruleset.scan(text)) == spans(ungated(ruleset.rules, text)), text


@pytest.mark.skipif(not Re2Gate.available(), reason="google-re2 is not installed")
@SETTINGS
@given(text=texts)
@example("4\u0661\u0661\u0661 \u0661\u0661\u0661\u0661 or -\u0661\u0662\u0663\u0664")  # digits to re, not to RE2
@example("\ud800 DB_PASSWORD=hunter22 from 34.120.5.17")  # a lone surrogate: not UTF-8
@example("caf\u00e9 +1 (415) 555-0132, 10.0.0.1.5")
def test_both_gates_let_the_same_rules_run(text: str) -> None:
    for rules in (DEFAULT_RULES, CONTEXT_RULES):
        lowered = fold(text)
        assert Re2Gate(rules).rules_for(text, lowered) == PythonGate(rules).rules_for(text, lowered)


ANCHORED = [rule for rule in DEFAULT_RULES + CONTEXT_RULES if rule.anchored]


def test_the_layers_use_anchored_rules() -> None:
    assert {rule.kind for rule in ANCHORED} >= {"email", "public_ip", "url_password", "bearer_token", "phone"}


@pytest.mark.parametrize("rule", ANCHORED, ids=lambda rule: f"{rule.kind}-{rule.label}")
def test_an_anchored_rule_matches_as_its_windowed_search_does_on_the_corpus(rule: Rule) -> None:
    searched = dataclasses.replace(rule, anchored=False, locate=None)
    for text in [*RECORDS, "\n".join(RECORDS)]:
        assert spans(ungated((rule,), text)) == spans(ungated((searched,), text)), text


# What each anchored rule's matches are made of, to meet its boundaries often.
POOLS = {
    "email": ["alice", ".smith", "@", "acme-corp.io", "example.com", "a@b.co", "git@github.com:o/r.git", "mailto:",
              ".", "-", "_", "%", "+", ":", "x", "1", "é", " ", "\n"],
    "public_ip": ["120.5.17.34", "1.2.3.4", "255", "256", "1", "12", "123", ".", "2a00:1450:4001:82b::200e",
                  "fe80::1", "::", ":", "beef", "g", "v", "=", "(", "/", "//", "@", "[", "]", "8080", "x", " ", "\n"],
    "url_password": ["http", "https", "postgres", "postgresql+asyncpg", "jdbc:mysql", "mongodb+srv", "git", "://",
                     "user", ":", "p4ss", "@", "host.io", "/", "'", '"', "-", "x", " ", "\n",
                     "postgres://app:S3cr3t@db.io/x", "jdbc:postgresql://u:p@h", "https://u:p@h.io"],
    "bearer_token": ["Bearer", "bearer", "BEARER", "xbearer", " ", "Ab3dEf9HiJkLmNoPqRsT", "=", ".", "~", "+", "/",
                     "-", "x", "\n"],
    "basic_auth": ["Basic", "basic", " ", "dXNlcjpwYXNzd29yZA==", "dXNlcjo=", "Ab3dEf9H", "=", "+", "/", "x", "\n"],
    "npm_auth_token": ["_authToken", "_auth", "_AUTH", "=", " ", "npm_abc12345xyz", '"', "'", "x", "\n"],
    "azure_sas_signature": ["?", "&", ";", "sig=", "SIG=", "Ab3dEf9HiJkLmNoPqRsTuVwXyZ0123456789", "%3D", "=", "x",
                            " "],
    "phone": ["+", "+1", "+44", "(415)", "555", "0132", "-", ".", "phone", "Phone:", "tel", "telephone", "mobile",
              "sms", "call me at", "contact number", "(415) 555-0132", "12345678", ":", "x", "1", " ", "\n"],
}  # fmt: skip


@pytest.mark.parametrize("rule", ANCHORED, ids=lambda rule: f"{rule.kind}-{rule.label}")
@SETTINGS
@given(data=st.data())
def test_an_anchored_rule_matches_as_its_windowed_search_does(rule: Rule, data: st.DataObject) -> None:
    pool = st.sampled_from(POOLS[rule.kind])
    text = data.draw(st.lists(st.one_of(pool, pool, st.text(max_size=2)), max_size=25).map("".join))
    searched = dataclasses.replace(rule, anchored=False, locate=None)
    assert spans(ungated((rule,), text)) == spans(ungated((searched,), text))


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


def test_a_span_an_earlier_rule_found_is_not_validated_again() -> None:
    calls: list[str] = []

    def counting(match: re.Match[str], _text: str) -> bool:
        calls.append(match.group(0))
        return True

    first = Rule("first", "secret", "FIRST", re.compile(r"tok3n\w+"), requires=("tok3n",))
    second = Rule("second", "secret", "SECOND", re.compile(r"tok3n\w+"), counting, requires=("tok3n",))
    assert [c.rule.kind for c in RuleSet([first, second]).find("a tok3nAbc b")] == ["first"]
    assert calls == []
    assert [c.rule.kind for c in RuleSet([second, first]).find("a tok3nAbc b")] == ["second"]
    assert calls == ["tok3nAbc"]


def test_anchored_needs_anchors() -> None:
    with pytest.raises(ValueError, match="anchored"):
        Rule("x", "secret", "X", re.compile("x"), anchored=True)
    with pytest.raises(ValueError, match="locate"):
        Rule("x", "secret", "X", re.compile("x"), anchors=("x",), locate=lambda *_: 0)
