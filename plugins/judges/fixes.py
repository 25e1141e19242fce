"""Mechanical fixes as unified diffs that ``git apply`` accepts, written straight from the line edits."""

from __future__ import annotations

from collections.abc import Iterable

from gateway.api import source_lines
from gateway_plugins.judges.findings import LineEdit, apply_edits, choose
from gateway_plugins.judges.python_checks import undefined_names

CONTEXT = 3
_NEEDS_QUOTING = frozenset('"\\\t\n\r')
_NO_NEWLINE = "\\ No newline at end of file\n"


def quote_path(path: str) -> str:
    """A path as git writes it in patch headers: C-quoted when it holds quotes, backslashes or control
    characters."""
    if not any(char in _NEEDS_QUOTING or ord(char) < 0x20 for char in path):
        return path
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\t", "\\t").replace("\n", "\\n")
    escaped = escaped.replace("\r", "\\r")
    return f'"{escaped}"'


def _line(prefix: str, text: str) -> str:
    return prefix + text if text.endswith("\n") else prefix + text + "\n" + _NO_NEWLINE


def edits_diff(path: str, content: str, chosen: dict[int, LineEdit]) -> str:
    """The unified diff of ``chosen`` (line → edit) on ``content``: hunks with three lines of context, merged
    when they would overlap. Linear in the file size (no sequence matching: the edits say what changed)."""
    old = source_lines(content, keepends=True)
    groups: list[list[int]] = []
    for number in sorted(chosen):
        if groups and number - groups[-1][-1] <= 2 * CONTEXT:
            groups[-1].append(number)
        else:
            groups.append([number])
    a_name, b_name = quote_path(f"a/{path}"), quote_path(f"b/{path}")
    out = [f"diff --git {a_name} {b_name}\n--- {a_name}\n+++ {b_name}\n"]
    shift = 0
    for group in groups:
        start, end = max(1, group[0] - CONTEXT), min(len(old), group[-1] + CONTEXT)
        body: list[str] = []
        old_count = new_count = 0
        for number in range(start, end + 1):
            text, edit = old[number - 1], chosen.get(number)
            old_count += 1
            if edit is None:
                body.append(_line(" ", text))
                new_count += 1
                continue
            body.append(_line("-", text))
            if edit.replacement is not None:
                body.append(_line("+", edit.replacement + text[len(text.rstrip("\r\n")) :]))
                new_count += 1
        new_start = start + shift - (1 if new_count == 0 else 0)
        out.append(f"@@ -{start},{old_count} +{new_start},{new_count} @@\n")
        out.extend(body)
        shift += new_count - old_count
    return "".join(out)


def fix_file(
    path: str, content: str, edits: Iterable[LineEdit], *, undefined_before: set[str] | None
) -> tuple[str, list[str]] | None:
    """Apply ``edits`` to ``content``; return the diff and the rules it fixes, or ``None``.

    For Python (``undefined_before`` given: the names pyflakes found undefined before), the fix must still parse
    and must not leave another name undefined, or it is dropped whole: mechanical fixes are offered only when
    they are safe.
    """
    chosen = choose(edits)
    if not chosen:
        return None
    fixed = apply_edits(content, chosen)
    if fixed == content:
        return None
    if undefined_before is not None:
        after = undefined_names(fixed)
        if after is None or not after <= undefined_before:
            return None
    rules = sorted({edit.rule for edit in chosen.values()})
    return edits_diff(path, content, chosen), rules
