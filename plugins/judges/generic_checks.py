"""Line checks for every language: conflict markers, TODO/FIXME, long lines, trailing whitespace, leftover
debugging statements, mixed indentation."""

from __future__ import annotations

import re
from collections.abc import Collection

from gateway.api import ReviewFile, source_lines
from gateway_plugins.judges.findings import DELETE, STRIP, Finding, LineEdit
from gateway_plugins.judges.languages import CODE_LANGUAGES

_CONFLICT_SIDE = re.compile(r"^(<{7}|>{7}|\|{7})(?: |$)")
_CONFLICT_MIDDLE = re.compile(r"^={7}$")
_TODO = re.compile(r"\b(TODO|FIXME|XXX|HACK)\b")
_COMMENT_START = re.compile(r"^\s*(//|#|/\*|\*|--)")
_JS_CONSOLE = re.compile(r"\bconsole\.(log|debug|trace|dir)\s*\(")
_JS_DEBUGGER = re.compile(r"^\s*debugger\s*(;\s*)?(//.*)?$")  # not ``\s*;?\s*``: quadratic on a blank run
_RUBY_DEBUGGER = re.compile(r"^\s*(binding\.(pry|irb)|byebug)\b")
_PHP_DUMP = re.compile(r"\b(var_dump|print_r)\s*\(")
_NO_INDENT_CHECK = {"make", "go", "markdown", "text"}


def analyse_lines(
    file: ReviewFile,
    *,
    language: str | None,
    max_line_length: int,
    is_test: bool,
    skip_whitespace: Collection[int] = (),
) -> tuple[list[Finding], list[LineEdit]]:
    """Line-accurate checks on ``file``. Only lines in scope are reported, except conflict markers.

    ``skip_whitespace`` lists lines whose trailing spaces belong to a string literal (left alone).
    """
    findings: list[Finding] = []
    edits: list[LineEdit] = []
    lines = source_lines(file.content)
    has_conflict = any(_CONFLICT_SIDE.match(line) for line in lines)
    code = language in CODE_LANGUAGES
    dominant = _dominant_indent(lines) if language not in _NO_INDENT_CHECK else None
    for number, text in enumerate(lines, start=1):
        if has_conflict and (_CONFLICT_SIDE.match(text) or _CONFLICT_MIDDLE.match(text)):
            findings.append(
                Finding("conflict-marker", "blocking", "correctness", number, "unresolved merge-conflict marker")
            )
            continue
        if not file.in_scope(number):
            continue
        marker = _TODO.search(text)
        if marker:
            findings.append(Finding("todo", "info", "maintainability", number, f"{marker.group(1)} left in the change"))
        if code and len(text) > max_line_length:
            findings.append(
                Finding(
                    "long-line", "info", "style", number, f"line is {len(text)} characters (limit {max_line_length})"
                )
            )
        if text != text.rstrip(" \t") and number not in skip_whitespace and not _markdown_break(text, language):
            findings.append(Finding("trailing-whitespace", "info", "style", number, "trailing whitespace"))
            edits.append(LineEdit(number, text.rstrip(" \t"), STRIP, "trailing-whitespace"))
        if language != "python" and not _COMMENT_START.match(text):
            _debugging(language, number, text, findings, edits, is_test=is_test)
        if dominant is not None:
            _indentation(number, text, dominant, findings)
    return findings, edits


def _markdown_break(text: str, language: str | None) -> bool:
    """Two trailing spaces are a hard line break in Markdown."""
    return language == "markdown" and text.endswith("  ") and not text.endswith("   ") and bool(text.strip())


def _debugging(
    language: str | None, number: int, text: str, findings: list[Finding], edits: list[LineEdit], *, is_test: bool
) -> None:
    if language in ("javascript", "typescript"):
        if _JS_DEBUGGER.match(text):
            findings.append(Finding("debugger", "major", "correctness", number, "`debugger` statement left in"))
            edits.append(LineEdit(number, None, DELETE, "debugger"))
        elif not is_test and (match := _JS_CONSOLE.search(text)):
            findings.append(
                Finding("console-log", "minor", "maintainability", number, f"`console.{match.group(1)}` left in")
            )
    elif language == "ruby" and _RUBY_DEBUGGER.match(text):
        findings.append(Finding("debugger", "major", "correctness", number, "debugger breakpoint left in"))
    elif language == "php" and not is_test and (match := _PHP_DUMP.search(text)):
        findings.append(Finding("debug-dump", "minor", "maintainability", number, f"`{match.group(1)}` left in"))


def _dominant_indent(lines: list[str]) -> str | None:
    """``"\\t"`` or ``" "``: the indentation most lines use (``None`` for an unindented file)."""
    tabs = sum(1 for line in lines if line.startswith("\t"))
    spaces = sum(1 for line in lines if line.startswith(" ") and line.strip())
    if not tabs and not spaces:
        return None
    return "\t" if tabs > spaces else " "


def _indentation(number: int, text: str, dominant: str, findings: list[Finding]) -> None:
    indent = text[: len(text) - len(text.lstrip(" \t"))]
    if not indent or not text.strip():
        return
    if " " in indent and "\t" in indent:
        findings.append(Finding("mixed-indentation", "info", "style", number, "indentation mixes tabs and spaces"))
    elif indent[0] != dominant:
        used, usual = ("tabs", "spaces") if indent[0] == "\t" else ("spaces", "tabs")
        findings.append(
            Finding("mixed-indentation", "info", "style", number, f"indented with {used}; the file uses {usual}")
        )
