"""The labelled corpus: no secret persisted, what must stay readable stays, false positives at most 1 %.

Caught = every labelled secret gone from the output of patterns + contextual (the default stored-field
layers); kept = every ``keep`` span still in it; a false positive = any change to a negative.
``bench/sanitizers.py`` prints the per-category table and the detect-secrets comparison.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gateway.api import PlaceholderMap
from gateway_plugins.sanitizers.contextual import ContextualSanitizer
from gateway_plugins.sanitizers.patterns import PatternSanitizer

CORPUS = Path(__file__).parents[2] / "data" / "sanitizer_corpus"


def _records() -> list[dict]:
    records = []
    for name in ("corpus.jsonl", "hard_cases.jsonl"):
        records.extend(json.loads(line) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines() if line)
    return records


RECORDS = _records()
PATTERNS, CONTEXTUAL = PatternSanitizer(), ContextualSanitizer()


def _sanitize(text: str) -> str:
    placeholders = PlaceholderMap()
    first = PATTERNS.sanitize_sync(text, placeholders=placeholders).text
    return CONTEXTUAL.sanitize_sync(first, placeholders=placeholders).text


OUTPUTS = {record["id"]: _sanitize(record["text"]) for record in RECORDS}


def test_corpus_size_and_coverage() -> None:
    positives = [r for r in RECORDS if r["label"] == "positive"]
    negatives = [r for r in RECORDS if r["label"] == "negative"]
    assert len(positives) >= 1500 and len(negatives) >= 1500
    assert len({r["category"] for r in positives}) >= 37
    assert sum(r["category"] == "stack_traces" for r in negatives) >= 400
    for record in positives:
        assert record["secrets"] and all(s in record["text"] for s in record["secrets"]), record["id"]
        assert all(k in record["text"] for k in record.get("keep", [])), record["id"]


def test_no_secret_persists() -> None:
    persisted = [
        (r["id"], [s for s in r["secrets"] if s in OUTPUTS[r["id"]]])
        for r in RECORDS
        if r["label"] == "positive" and any(s in OUTPUTS[r["id"]] for s in r["secrets"])
    ]
    assert persisted == []


def test_what_must_stay_readable_stays() -> None:
    lost = [
        (r["id"], [k for k in r.get("keep", []) if k not in OUTPUTS[r["id"]]])
        for r in RECORDS
        if any(k not in OUTPUTS[r["id"]] for k in r.get("keep", []))
    ]
    assert len(lost) <= 0.01 * len(RECORDS), lost


def test_false_positive_rate() -> None:
    negatives = [r for r in RECORDS if r["label"] == "negative"]
    changed = [r["id"] for r in negatives if OUTPUTS[r["id"]] != r["text"]]
    assert len(changed) / len(negatives) <= 0.01, changed


def test_generator_is_deterministic() -> None:
    import sys

    sys.path.insert(0, str(CORPUS))
    try:
        from generate import build  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(CORPUS))
    committed = [json.loads(line) for line in (CORPUS / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    assert build() == committed


@pytest.mark.parametrize(
    "record", [r for r in RECORDS if r["category"] == "goal_false_positives"], ids=lambda r: r["id"]
)
def test_goal_false_positives_survive(record: dict) -> None:
    assert OUTPUTS[record["id"]] == record["text"]
