"""Combining judges: the verdict rules, averaged dimensions, comments, citations and cards."""

from __future__ import annotations

import pytest

from gateway.api import JudgeResult, ReviewComment, ReviewFile
from gateway_plugins.thinking.combine import combine, verdict_for

FILES = (ReviewFile("src/a.py", "a\n" * 20), ReviewFile("thought/block-1.py", "b\n" * 5, origin="thought"))


@pytest.mark.parametrize(
    ("overall", "blocking", "verdict"),
    [
        (85, False, "pass"),
        (100, False, "pass"),
        (84, False, "revise"),
        (56, False, "revise"),
        (55, False, "reject"),
        (10, False, "reject"),
        (99, True, "reject"),
        (None, False, "revise"),
    ],
)
def test_verdict_rules(overall: int | None, blocking: bool, verdict: str) -> None:
    assert verdict_for(overall, blocking, threshold=85, reject_margin=30) == verdict


def result(judge: str, score: int | None, dims: dict[str, int], *comments: ReviewComment) -> JudgeResult:
    return JudgeResult(judge, score, dims, f"{judge} says hi", tuple(comments), notes=None if score else "down")


def test_scores_and_dimensions_average_over_the_judges_that_scored() -> None:
    combined = combine(
        [
            result("a", 90, {"style": 80, "correctness": 100, "vibes": 10}),
            result("b", 71, {"correctness": 60}),
            result("c", None, {}),
        ],
        FILES, threshold=85, reject_margin=30, max_comments=10,
    )  # fmt: skip
    assert combined.overall == 80 and combined.verdict == "revise"
    assert [(d.name, d.score) for d in combined.dimensions] == [("correctness", 80), ("style", 80), ("vibes", 10)]
    assert [(c.model, c.score, c.notes) for c in combined.cards] == [("a", 90, None), ("b", 71, None)]
    assert [(a.model, a.reason) for a in combined.abstained] == [("c", "down")]
    assert "c: left out (down)" in combined.review.summary


def test_comments_are_deduplicated_capped_by_severity_and_cited() -> None:
    same = ReviewComment("src/a.py", 3, "x is unused", "minor")
    combined = combine(
        [
            result("a", 60, {"style": 60}, same, ReviewComment("src/a.py", 9, "style nit", "info"),
                   ReviewComment("thought/block-1.py", 2, "crash", "blocking", end_line=4)),
            result("b", 60, {"style": 60}, same, ReviewComment("src/a.py", 1, "bug", "major", end_line=2)),
        ],
        FILES, threshold=50, reject_margin=30, max_comments=3,
    )  # fmt: skip
    assert [(c.path, c.line, c.judge) for c in combined.review.inline] == [
        ("src/a.py", 1, "b"),
        ("src/a.py", 3, "a"),
        ("thought/block-1.py", 2, "a"),
    ]
    assert combined.review.citations == ["repo://src/a.py:1-2", "repo://src/a.py:3-3", "thought://block-1.py:2-4"]
    assert combined.verdict == "reject" and combined.blocking == ["crash at thought/block-1.py:2"]
    assert "1 less severe comment(s) not shown" in combined.review.summary


def test_nobody_scored() -> None:
    combined = combine([result("a", None, {})], FILES, threshold=85, reject_margin=30, max_comments=5)
    assert combined.overall is None and combined.verdict == "revise" and combined.dimensions == []
    assert combined.cards == [] and [a.model for a in combined.abstained] == ["a"]
    assert combined.review.summary.startswith("No judge could score this code")
