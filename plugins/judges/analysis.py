"""The internal judge's analysis of the files under review: findings and mechanical fixes, as one picklable call.

It parses code with ``ast`` and runs pyflakes: for a large module a single ``ast.parse`` keeps the GIL for tens of
milliseconds, so the judge runs :func:`analyse_files` in a worker process when the files are long, in a worker
thread otherwise (:func:`gateway.api.off_loop`). Everything it takes and returns pickles.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from gateway.api import ReviewFile
from gateway_plugins.judges.findings import Finding, LineEdit
from gateway_plugins.judges.fixes import fix_file
from gateway_plugins.judges.generic_checks import analyse_lines
from gateway_plugins.judges.languages import language_of, looks_like_test
from gateway_plugins.judges.python_checks import analyse_python

__all__ = ["Analysis", "analyse_files", "language"]


@dataclass
class Analysis:
    findings: list[tuple[str, Finding]] = field(default_factory=list)
    """(path, finding) for every file."""
    diffs: list[str] = field(default_factory=list)
    """The mechanical fixes, one diff per file."""
    fixed_rules: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


def language(file: ReviewFile) -> str | None:
    return file.language or language_of(file.path)


def analyse_files(files: tuple[ReviewFile, ...], *, complexity_threshold: int, max_line_length: int) -> Analysis:
    """Findings of every file, the diffs of the mechanical fixes, the rules they fix, and notes."""
    result = Analysis()
    for file in files:
        file_findings, edits, undefined = _analyse(file, result.notes, complexity_threshold, max_line_length)
        result.findings.extend((file.path, finding) for finding in file_findings)
        if not edits or file.origin != "workspace" or file.fragment or file.truncated:
            continue
        if language(file) == "python" and undefined is None:
            continue  # Python that was not analysed (it does not parse) gets no fix
        fixed = fix_file(file.path, file.content, edits, undefined_before=undefined)
        if fixed is not None:
            result.diffs.append(fixed[0])
            result.fixed_rules.update(fixed[1])
    return result


def _analyse(
    file: ReviewFile, notes: list[str], complexity_threshold: int, max_line_length: int
) -> tuple[list[Finding], list[LineEdit], set[str] | None]:
    """Findings, mechanical edits, and (Python) the names undefined before any fix."""
    kind = language(file)
    is_test = looks_like_test(file.path)
    findings: list[Finding] = []
    edits: list[LineEdit] = []
    skip: frozenset[int] = frozenset()
    undefined: set[str] | None = None
    if kind == "python":
        report = analyse_python(file, complexity_threshold=complexity_threshold, is_test=is_test)
        findings += report.findings
        edits += report.edits
        skip = report.string_lines
        undefined = report.undefined
        if report.note:
            notes.append(report.note)
    line_findings, line_edits = analyse_lines(
        file, language=kind, max_line_length=max_line_length, is_test=is_test, skip_whitespace=skip
    )
    return findings + line_findings, edits + line_edits, undefined
