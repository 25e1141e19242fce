"""The ``internal`` judge: offline, deterministic review built on static analysis.

Python files get a parse check, pyflakes (undefined names, unused imports...), swallowed-exception and
complexity analysis on the ``ast``, and leftover debugger calls; every file gets line checks (conflict markers,
TODO/FIXME, long lines, trailing whitespace, console logging, mixed indentation); secrets are found by the
sanitizer layer named in the config (``patterns`` by default); in ``diff`` scope, changed source files without a
changed test are noted. Scores follow the deduction table of :mod:`.findings`.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.api import (
    PROCESS_CHARS,
    FieldKind,
    JudgeRequest,
    JudgeResult,
    PlaceholderMap,
    ReviewComment,
    ReviewFile,
    Sanitizer,
    off_loop,
    sanitize_off_loop,
)
from gateway_plugins.judges.analysis import analyse_files
from gateway_plugins.judges.findings import Finding, coverage_score, deductions
from gateway_plugins.judges.languages import is_source_path, looks_like_test, subject_stem

log = structlog.get_logger(__name__)

_NEWLINE = re.compile("\n")

MAX_COMMENTS_PER_RULE = 10
"""Comments of one rule in one file beyond this are summarised (they still count in the score)."""


class InternalJudgeConfig(BaseModel):
    """``[plugins.judge.internal]``."""

    model_config = ConfigDict(extra="forbid")

    complexity_threshold: int = Field(default=10, ge=2, le=100)
    """Cyclomatic complexity above which a function is flagged (twice as much is a major finding)."""
    max_line_length: int = Field(default=120, ge=40, le=1000)
    secret_scanner: str | None = "patterns"
    """The sanitizer layer used to find secrets; ``""`` disables the secret scan (no security score)."""
    require_tests: bool = True
    """Score ``test_coverage`` in diff scope: changed source files should come with a changed test."""

    @field_validator("secret_scanner")
    @classmethod
    def _empty_disables(cls, value: str | None) -> str | None:
        return value or None


class InternalJudge:
    """See the module docstring."""

    def __init__(self, config: InternalJudgeConfig, scanner: Callable[[], Sanitizer] | None = None) -> None:
        self._config = config
        self._scanner = scanner

    @property
    def name(self) -> str:
        return "internal"

    async def review(self, request: JudgeRequest) -> JudgeResult:
        if not request.files and not request.changed_paths:
            return JudgeResult.abstain(self.name, "nothing to review")
        # CPU-bound (parsing, pyflakes): off the event loop, in a worker process for long files (ast.parse holds
        # the GIL in one call), so the loop keeps serving other calls.
        analysis = await off_loop(
            partial(
                analyse_files,
                request.files,
                complexity_threshold=self._config.complexity_threshold,
                max_line_length=self._config.max_line_length,
            ),
            size=sum(len(file.content) for file in request.files),
            threshold=0,
            process_from=PROCESS_CHARS,
        )
        findings, diffs, fixed_rules, notes = analysis.findings, analysis.diffs, analysis.fixed_rules, analysis.notes
        secrets_scanned = await self._scan_secrets(request.files, findings, notes)
        coverage = self._coverage(request, findings) if request.scope == "diff" and self._config.require_tests else None

        total, per_dimension = deductions(finding for _, finding in findings)
        dimensions = {
            name: max(0, 100 - per_dimension.get(name, 0))
            for name in ("correctness", "security", "maintainability", "style")
            if name != "security" or secrets_scanned
        }
        if coverage is not None:
            dimensions["test_coverage"] = coverage
        comments = _comments(findings)
        return JudgeResult(
            judge=self.name,
            score=max(0, 100 - total),
            dimensions=dimensions,
            summary=_summary(request, findings, fixed_rules),
            comments=comments,
            proposed_diff="".join(diffs) or None,
            notes="; ".join(notes) or None,
        )

    async def _scan_secrets(
        self, files: tuple[ReviewFile, ...], findings: list[tuple[str, Finding]], notes: list[str]
    ) -> bool:
        """Add a blocking finding per secret on a line in scope; ``False`` when no scan could run."""
        if self._config.secret_scanner is None or self._scanner is None:
            notes.append("secret scan disabled")
            return False
        try:
            scanner = self._scanner()
            for file in files:
                report = await sanitize_off_loop(
                    scanner, file.content, kind=FieldKind.CODE, placeholders=PlaceholderMap()
                )
                secrets = [found for found in report.findings if found.category == "secret"]
                starts = _line_starts(file.content) if secrets else []
                for found in secrets:
                    line = bisect.bisect_right(starts, found.start)
                    if file.in_scope(line):
                        text = f"possible secret ({found.kind}): remove it from the code and rotate the credential"
                        findings.append((file.path, Finding("secret", "blocking", "security", line, text)))
        except Exception as error:  # a scanner is a plugin: any failure only disables the security score
            log.warning("judge.internal.secret_scan_failed", error=repr(error))
            notes.append(f"secret scan unavailable ({type(error).__name__}: {error})")
            return False
        return True

    def _coverage(self, request: JudgeRequest, findings: list[tuple[str, Finding]]) -> int | None:
        """Share of changed source files accompanied by a changed test; adds a finding per untested file.

        A source file is covered when a changed test file's path mentions its stem (``parser.py`` ↔
        ``test_parser.py``); when tests changed but none names it, it counts half.
        """
        workspace = {file.path: file for file in request.files if file.origin == "workspace"}
        changed = sorted(set(request.changed_paths) | set(workspace))
        sources = [
            path for path in changed if is_source_path(path) and (path not in workspace or _has_lines(workspace[path]))
        ]
        if not sources:
            return None
        tests = [path.lower() for path in changed if looks_like_test(path)]
        credit = 0.0
        for path in sources:
            stem = subject_stem(path)
            if any(stem in test for test in tests):
                credit += 1
                continue
            credit += 0.5 if tests else 0.0
            file = workspace.get(path)
            line = min(file.changed_lines) if file is not None and file.changed_lines else 1
            text = "changed code without a matching test change" + (" (other tests changed)" if tests else "")
            findings.append((path, Finding("untested-change", "minor", "test_coverage", line, text)))
        return coverage_score(len(sources), credit)


def _has_lines(file: ReviewFile) -> bool:
    return file.changed_lines is None or bool(file.changed_lines)


def _line_starts(text: str) -> list[int]:
    """The offset of each line's first character (lines end at ``\\n``)."""
    return [0, *(match.end() for match in _NEWLINE.finditer(text))]


def _comments(findings: list[tuple[str, Finding]]) -> tuple[ReviewComment, ...]:
    ordered = sorted(findings, key=lambda item: (item[0], item[1].line, item[1].rule))
    shown: Counter[tuple[str, str]] = Counter()
    comments: list[ReviewComment] = []
    for path, finding in ordered:
        key = (path, finding.rule)
        shown[key] += 1
        if shown[key] <= MAX_COMMENTS_PER_RULE:
            comments.append(finding.comment(path))
    return tuple(comments)


def _summary(request: JudgeRequest, findings: list[tuple[str, Finding]], fixed: Counter[str]) -> str:
    files = len(request.files)
    if not findings:
        return f"No findings in {files} file(s)."
    by_severity = Counter(finding.severity for _, finding in findings)
    counts = ", ".join(f"{by_severity[s]} {s}" for s in ("blocking", "major", "minor", "info") if by_severity[s])
    top: dict[str, Any] = {}
    for path, finding in sorted(findings, key=lambda item: _RANK[item[1].severity]):
        top.setdefault(finding.rule, f"{finding.rule} at {path}:{finding.line}")
    lead = "; ".join(list(top.values())[:3])
    text = f"{len(findings)} finding(s) in {files} file(s) ({counts}). Most serious: {lead}."
    if fixed:
        text += f" A mechanical fix is proposed for: {', '.join(sorted(fixed))}."
    return text


_RANK = {"blocking": 0, "major": 1, "minor": 2, "info": 3}
