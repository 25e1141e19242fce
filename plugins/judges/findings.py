"""Findings of the internal judge, mechanical line edits, and the deduction table that turns findings into scores.

Scoring: every finding costs points by severity —
``info`` 2, ``minor`` 6, ``major`` 20, ``blocking`` 40 — and the points one rule can cost are capped (``info`` 6,
``minor`` 18, ``major`` 60, ``blocking`` 100), so a hundred trailing spaces do not outweigh one undefined name.
The overall score is 100 minus every capped deduction; a dimension's score is 100 minus the deductions of its own
findings (``test_coverage`` is the share of changed source files that come with tests, see :func:`coverage_score`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.api import ReviewComment, Severity, source_lines

DEDUCTION: dict[str, int] = {"info": 2, "minor": 6, "major": 20, "blocking": 40}
RULE_CAP: dict[str, int] = {"info": 6, "minor": 18, "major": 60, "blocking": 100}

DELETE = 3
REWRITE = 2
STRIP = 1


@dataclass(frozen=True)
class Finding:
    """One problem at a line of the new file."""

    rule: str
    severity: Severity
    dimension: str
    line: int
    message: str
    end_line: int | None = None

    def comment(self, path: str) -> ReviewComment:
        return ReviewComment(
            path=path,
            line=self.line,
            message=self.message,
            severity=self.severity,
            dimension=self.dimension,
            rule=self.rule,
            end_line=self.end_line if self.end_line and self.end_line > self.line else None,
        )


@dataclass(frozen=True)
class LineEdit:
    """Replace line ``line`` by ``replacement`` (its line ending is kept) or delete it (``replacement=None``).

    When two edits target a line, the higher ``priority`` wins (delete > rewrite > strip).
    """

    line: int
    replacement: str | None
    priority: int
    rule: str


def deductions(findings: Iterable[Finding]) -> tuple[int, dict[str, int]]:
    """Total capped deduction, and the capped deduction per dimension."""
    per_rule: dict[tuple[str, str], int] = defaultdict(int)
    dimension_of: dict[tuple[str, str], str] = {}
    for finding in findings:
        key = (finding.rule, finding.severity)
        per_rule[key] += DEDUCTION[finding.severity]
        dimension_of[key] = finding.dimension
    total = 0
    per_dimension: dict[str, int] = defaultdict(int)
    for key, points in per_rule.items():
        capped = min(points, RULE_CAP[key[1]])
        total += capped
        per_dimension[dimension_of[key]] += capped
    return total, dict(per_dimension)


def coverage_score(sources: int, covered: float) -> int:
    """``test_coverage``: the share of changed source files accompanied by a changed test (0-100)."""
    return 100 if sources == 0 else round(100 * covered / sources)


def choose(edits: Iterable[LineEdit]) -> dict[int, LineEdit]:
    """One edit per line: the highest priority wins."""
    chosen: dict[int, LineEdit] = {}
    for edit in edits:
        current = chosen.get(edit.line)
        if current is None or edit.priority > current.priority:
            chosen[edit.line] = edit
    return chosen


def apply_edits(content: str, chosen: dict[int, LineEdit]) -> str:
    """``content`` with the chosen edits applied."""
    lines = source_lines(content, keepends=True)
    out: list[str] = []
    for number, line in enumerate(lines, start=1):
        edit = chosen.get(number)
        if edit is None:
            out.append(line)
        elif edit.replacement is not None:
            body = line.rstrip("\r\n")
            out.append(edit.replacement + line[len(body) :])
    return "".join(out)
