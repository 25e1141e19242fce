"""Judge protocol: reviewers that score code under audit (provider kind ``judge``).

A judge receives a :class:`JudgeRequest` (the files under review, with the lines a change touched) and answers a
:class:`JudgeResult`: a 0-100 score, per-dimension scores from the standard :data:`RUBRIC`, line comments, and
optionally a mechanical fix as a unified diff. The thinking pack runs the judges a session names, combines their
results into one verdict and shows one card per judge.

A judge that cannot do its work (a remote model is down, answers garbage, times out) returns
:meth:`JudgeResult.abstain` instead of raising: it is left out of the verdict and its card says why. It never
makes a score up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

ReviewScope = Literal["diff", "paths", "workspace"]
Origin = Literal["workspace", "thought"]
Severity = Literal["info", "minor", "major", "blocking"]

SEVERITIES: tuple[Severity, ...] = ("info", "minor", "major", "blocking")
"""Ascending. ``blocking`` findings (a parse error, a committed secret, a merge-conflict marker) reject a change
whatever its score."""

RUBRIC: Mapping[str, float] = {
    "correctness": 0.35,
    "security": 0.25,
    "maintainability": 0.15,
    "test_coverage": 0.15,
    "style": 0.10,
}
"""The standard dimensions and their weights. A judge scores the dimensions that apply to a request (no
``test_coverage`` when no change is under review, say) and may add dimensions of its own (weight 0 here)."""


def rubric_score(dimensions: Mapping[str, float]) -> int:
    """The weighted mean of the rubric dimensions present in ``dimensions`` (0-100, rounded).

    Dimensions outside :data:`RUBRIC` do not count; with none of the rubric present, the plain mean is used.
    """
    weighted = [(score, RUBRIC[name]) for name, score in dimensions.items() if name in RUBRIC]
    if weighted:
        total = sum(weight for _, weight in weighted)
        return round(sum(score * weight for score, weight in weighted) / total)
    if dimensions:
        return round(sum(dimensions.values()) / len(dimensions))
    raise ValueError("no dimension to score")


def source_lines(text: str, *, keepends: bool = False) -> list[str]:
    """``text``'s lines as git and editors number them (and patches count them): broken at ``\n`` only (a
    ``\r\n`` ending is one break). ``str.splitlines`` also breaks at form feeds, ``\x1c``-``\x1e``, ``\x85``,
    ``\u2028`` and ``\u2029``, which would shift every line number after one. Python's parser also breaks at a
    lone ``\r`` (old Mac files): a check that looks lines up by ``ast`` line numbers should not assume they exist.
    With ``keepends`` each line keeps its ending; without, the ending (``\r`` of a ``\r\n`` included) is
    dropped."""
    if not text:
        return []
    lines = text.split("\n")
    if keepends:
        kept = [line + "\n" for line in lines[:-1]]
        return [*kept, lines[-1]] if lines[-1] else kept
    if not lines[-1]:
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@dataclass(frozen=True)
class ReviewFile:
    """One file under review.

    ``path`` is POSIX and relative to the workspace root (code taken from the thought itself is named
    ``thought/block-<n>.<ext>`` with ``origin="thought"``). ``content`` is the new text. ``changed_lines`` are the
    1-based lines of ``content`` that the change added or modified; ``None`` puts the whole file in scope (paths
    and workspace scopes). A ``fragment`` was rebuilt from diff hunks alone: lines outside the hunks are blank, so
    whole-file analyses (undefined names...) do not apply to it.
    """

    path: str
    content: str
    origin: Origin = "workspace"
    changed_lines: frozenset[int] | None = None
    language: str | None = None
    """``python``, ``javascript``, ``typescript``, ``go``... or ``None`` when unknown."""
    fragment: bool = False
    truncated: bool = False
    """The file was larger than the size limit; ``content`` is its beginning."""

    @property
    def uri(self) -> str:
        """The citation base: ``repo://<path>`` or ``thought://<name>``."""
        if self.origin == "thought":
            return f"thought://{self.path.removeprefix('thought/')}"
        return f"repo://{self.path}"

    def in_scope(self, line: int) -> bool:
        return self.changed_lines is None or line in self.changed_lines


@dataclass(frozen=True)
class JudgeRequest:
    """What a judge reviews."""

    task: str
    """What the session asked for (``SessionConfig.task``)."""
    scope: ReviewScope
    files: tuple[ReviewFile, ...]
    diff: str = ""
    """The unified diff under review (``diff`` scope, and diffs written in the thought), possibly truncated."""
    changed_paths: tuple[str, ...] = ()
    """Every path the change adds or modifies, including files too large to load (deleted files excluded)."""
    overview: str = ""
    """A bounded overview of the repository (tree and key files), for ``workspace`` scope."""
    thought: str = ""
    """The thought that triggered the audit, for context."""


@dataclass(frozen=True)
class ReviewComment:
    """A line comment. ``line``/``end_line`` are lines of the new file (``ReviewFile.content``)."""

    path: str
    line: int
    message: str
    severity: Severity = "minor"
    dimension: str = "correctness"
    rule: str = ""
    """A stable identifier of the check (``unused-import``, ``swallowed-exception``...), empty for free text."""
    end_line: int | None = None


@dataclass(frozen=True)
class JudgeResult:
    """A judge's review. ``score`` is ``None`` when the judge abstained (``notes`` says why)."""

    judge: str
    """The label on the judge's card: ``internal``, ``gemini/gemini-2.5-flash``..."""
    score: int | None
    dimensions: Mapping[str, int] = field(default_factory=dict)
    summary: str = ""
    comments: tuple[ReviewComment, ...] = ()
    proposed_diff: str | None = None
    """A unified diff (``a/``, ``b/`` prefixes, relative to the workspace root) fixing what can be fixed
    mechanically; it must apply with ``git apply`` to the reviewed contents."""
    notes: str | None = None

    @property
    def abstained(self) -> bool:
        return self.score is None

    @property
    def blocking(self) -> bool:
        return any(comment.severity == "blocking" for comment in self.comments)

    @classmethod
    def abstain(cls, judge: str, reason: str) -> JudgeResult:
        """The result of a judge that could not review: left out of the verdict, with the reason on its card."""
        return cls(judge=judge, score=None, notes=reason)


@runtime_checkable
class Judge(Protocol):
    """Reviews code and scores it. Deterministic judges give equal results for equal requests."""

    @property
    def name(self) -> str: ...

    async def review(self, request: JudgeRequest) -> JudgeResult:
        """Review ``request``. Operational failures return :meth:`JudgeResult.abstain`, never an invented score."""
        ...
