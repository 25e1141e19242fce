"""Static analysis of Python files: parse errors, pyflakes, swallowed exceptions, complexity, debugger calls.

Every finding carries the line in the new file; mechanical fixes (unused imports, bare ``except:``, leftover
``breakpoint()``) come back as :class:`LineEdit` objects that :mod:`.fixes` turns into a unified diff.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Any

from pyflakes import checker as pyflakes_checker
from pyflakes import messages as pyflakes_messages

from gateway.api import ReviewFile, Severity, parse_python, parsing_python, source_lines
from gateway_plugins.judges.findings import DELETE, REWRITE, Finding, LineEdit

_UNDEFINED = (pyflakes_messages.UndefinedName, pyflakes_messages.UndefinedLocal, pyflakes_messages.UndefinedExport)
_COMPILE_ERRORS = (
    pyflakes_messages.ReturnOutsideFunction,
    pyflakes_messages.YieldOutsideFunction,
    pyflakes_messages.ContinueOutsideLoop,
    pyflakes_messages.BreakOutsideLoop,
    pyflakes_messages.DefaultExceptNotLast,
    pyflakes_messages.TwoStarredExpressions,
    pyflakes_messages.TooManyExpressionsInStarredAssignment,
    pyflakes_messages.DuplicateArgument,
)
_PYFLAKES_RULES: dict[type, tuple[str, Severity, str]] = {
    pyflakes_messages.UnusedVariable: ("unused-variable", "minor", "maintainability"),
    pyflakes_messages.RedefinedWhileUnused: ("redefined-unused", "minor", "maintainability"),
    pyflakes_messages.ImportStarUsed: ("star-import", "minor", "maintainability"),
    pyflakes_messages.ImportStarUsage: ("star-import", "minor", "maintainability"),
    pyflakes_messages.ImportShadowedByLoopVar: ("shadowed-import", "minor", "maintainability"),
    pyflakes_messages.FStringMissingPlaceholders: ("fstring-without-placeholders", "info", "style"),
    pyflakes_messages.IsLiteral: ("is-literal", "major", "correctness"),
    pyflakes_messages.IfTuple: ("always-true", "major", "correctness"),
    pyflakes_messages.AssertTuple: ("always-true", "major", "correctness"),
    pyflakes_messages.RaiseNotImplemented: ("raise-not-implemented", "major", "correctness"),
    pyflakes_messages.MultiValueRepeatedKeyLiteral: ("repeated-key", "major", "correctness"),
    pyflakes_messages.MultiValueRepeatedKeyVariable: ("repeated-key", "major", "correctness"),
}
_BROAD = {"Exception", "BaseException"}
_DEBUGGERS = {("pdb", "set_trace"), ("ipdb", "set_trace"), ("pudb", "set_trace")}
_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.IfExp, ast.ExceptHandler, ast.match_case)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


@dataclass
class PythonReport:
    findings: list[Finding] = field(default_factory=list)
    edits: list[LineEdit] = field(default_factory=list)
    parsed: bool = False
    string_lines: frozenset[int] = frozenset()
    """Lines whose end lies inside a string literal (trailing spaces there are data, not style)."""
    undefined: set[str] | None = None
    """Every name pyflakes reports undefined in the whole file (``None`` when the file was not analysed)."""
    note: str | None = None


class _Checker(pyflakes_checker.Checker):  # type: ignore[misc]
    """pyflakes, whose own ``ast.parse`` of each string annotation (``x: "Foo"``) holds the process's parse lock
    (:func:`gateway.api.parsing_python`), and nothing else of its run does."""

    def handleStringAnnotation(self, *args: Any, **kwargs: Any) -> None:
        with parsing_python():
            super().handleStringAnnotation(*args, **kwargs)


def undefined_names(source: str) -> set[str] | None:
    """The undefined names pyflakes reports in ``source``, or ``None`` when it does not parse."""
    try:
        found = _Checker(parse_python(source), filename="<fix>").messages
    except (SyntaxError, ValueError, RecursionError):
        return None
    return {str(m.message_args[0]) for m in found if isinstance(m, _UNDEFINED)}


_LONE_CR = re.compile(r"\r(?!\n)")


def analyse_python(file: ReviewFile, *, complexity_threshold: int, is_test: bool) -> PythonReport:
    """Analyse one Python file. Findings outside ``file.changed_lines`` are dropped, except parse errors and
    undefined names (a change can break code it did not touch)."""
    report = PythonReport()
    if _LONE_CR.search(file.content):  # Python numbers lines at a lone \r, git and the edits do not: no agreement
        report.note = f"{file.path}: lines end in lone carriage returns (old Mac style); Python checks were skipped"
        return report
    lines = source_lines(file.content)
    try:
        tree = parse_python(file.content, filename=file.path)
    except (SyntaxError, ValueError, RecursionError) as error:  # nested too deeply: Python cannot compile it either
        if file.fragment:
            report.note = f"{file.path}: the diff hunks alone do not parse; only line checks ran"
            return report
        line = getattr(error, "lineno", None) or 1
        message = getattr(error, "msg", None) or str(error)
        report.findings.append(
            Finding("parse-error", "blocking", "correctness", min(max(line, 1), max(len(lines), 1)), message)
        )
        return report
    report.parsed = True
    report.string_lines = _string_lines(file.content)
    index = _Index.of(tree)
    if not file.fragment:
        try:
            _pyflakes(file, tree, lines, index, report, snippet=file.origin == "thought")
        except RecursionError:  # pyflakes walks the tree recursively
            report.undefined = None
            report.note = f"{file.path}: nested too deeply for pyflakes; its checks were skipped"
    for handler in index.handlers:
        _handler(file, handler, lines, report)
    for function in index.functions:
        _complexity(file, function, complexity_threshold, report)
    for call in index.calls:
        _debug_call(file, call, lines, index.parents, report, is_test=is_test)
    return report


@dataclass
class _Index:
    """What the checks need from the tree, gathered in one walk."""

    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    """A statement's enclosing node; a call's ``Expr`` statement when the call is one."""
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)
    handlers: list[ast.ExceptHandler] = field(default_factory=list)
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = field(default_factory=list)
    calls: list[ast.Call] = field(default_factory=list)

    @classmethod
    def of(cls, tree: ast.AST) -> _Index:
        index = cls()
        for node in ast.walk(tree):
            for name in ("body", "orelse", "finalbody"):
                block = getattr(node, name, None)
                if isinstance(block, list):
                    for child in block:
                        index.parents[child] = node
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                index.parents[node.value] = node
            if isinstance(node, ast.Call):
                index.calls.append(node)
            elif isinstance(node, ast.ExceptHandler):
                index.handlers.append(node)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                index.functions.append(node)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                index.imports.append(node)
        return index


def _pyflakes(
    file: ReviewFile, tree: ast.Module, lines: list[str], index: _Index, report: PythonReport, *, snippet: bool
) -> None:
    messages = sorted(_Checker(tree, filename=file.path).messages, key=lambda m: (m.lineno, m.col))
    report.undefined = {str(m.message_args[0]) for m in messages if isinstance(m, _UNDEFINED)}
    unused_by_line: dict[int, set[str]] = {}
    for message in messages:
        text = message.message % message.message_args
        line = message.lineno
        if isinstance(message, _UNDEFINED):
            if snippet:
                text += " (a snippet: it may be defined elsewhere)"
            report.findings.append(
                Finding("undefined-name", "minor" if snippet else "major", "correctness", line, text)
            )
            continue
        if not file.in_scope(line):
            continue
        if isinstance(message, pyflakes_messages.UnusedImport):
            reexport = file.path.endswith("__init__.py")
            severity: Severity = "info" if (snippet or reexport) else "minor"
            hint = "; list it in __all__ if it is a re-export" if reexport else ""
            report.findings.append(Finding("unused-import", severity, "maintainability", line, text + hint))
            if not (snippet or reexport):
                unused_by_line.setdefault(line, set()).add(str(message.message_args[0]))
        elif isinstance(message, _COMPILE_ERRORS):
            report.findings.append(Finding("compile-error", "major", "correctness", line, text))
        else:
            rule, severity, dimension = _PYFLAKES_RULES.get(type(message), ("pyflakes", "minor", "correctness"))
            report.findings.append(Finding(rule, severity, dimension, line, text))
    for node in index.imports:
        if node.lineno in unused_by_line:
            edit = _remove_imports(node, unused_by_line[node.lineno], lines, index.parents)
            if edit is not None:
                report.edits.append(edit)


def _import_label(node: ast.Import | ast.ImportFrom, alias: ast.alias) -> str:
    """The name pyflakes prints for an imported alias (``os.path``, ``x.a as b``, ``.e.f``)."""
    if isinstance(node, ast.ImportFrom):
        module = "." * node.level + (node.module or "")
        name = f"{module}{alias.name}" if module.endswith(".") or not module else f"{module}.{alias.name}"
    else:
        name = alias.name
    return f"{name} as {alias.asname}" if alias.asname else name


def _alone_on_line(node: ast.stmt, lines: list[str]) -> bool:
    """Whether ``node`` spans exactly one line that holds nothing else (a trailing comment aside)."""
    if node.lineno != node.end_lineno or node.end_col_offset is None:
        return False
    text = lines[node.lineno - 1]
    rest = text[node.end_col_offset :].strip()
    return not text[: node.col_offset].strip() and (not rest or rest.startswith("#"))


def _removal(node: ast.stmt, lines: list[str], parents: dict, rule: str) -> LineEdit:
    """Delete the line of ``node``, or put ``pass`` there when it is the only statement of its block."""
    parent = parents.get(node)
    siblings = next(
        (body for name in ("body", "orelse", "finalbody") if node in (body := getattr(parent, name, None) or [])),
        [],
    )
    if len(siblings) == 1 and not isinstance(parent, ast.Module):
        return LineEdit(node.lineno, " " * node.col_offset + "pass", DELETE, rule)
    return LineEdit(node.lineno, None, DELETE, rule)


def _remove_imports(
    node: ast.Import | ast.ImportFrom, unused: set[str], lines: list[str], parents: dict
) -> LineEdit | None:
    if not _alone_on_line(node, lines):
        return None
    kept = [alias for alias in node.names if _import_label(node, alias) not in unused]
    if len(kept) == len(node.names):
        return None
    if not kept:
        return _removal(node, lines, parents, "unused-import")
    clone = ast.ImportFrom(node.module, kept, node.level) if isinstance(node, ast.ImportFrom) else ast.Import(kept)
    text = lines[node.lineno - 1]
    comment = text[node.end_col_offset :].strip()
    rebuilt = " " * node.col_offset + ast.unparse(clone) + (f"  {comment}" if comment else "")
    return LineEdit(node.lineno, rebuilt, REWRITE, "unused-import")


def _handler(file: ReviewFile, node: ast.ExceptHandler, lines: list[str], report: PythonReport) -> None:
    if not file.in_scope(node.lineno):
        return
    swallowed = all(
        isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant))
        for stmt in node.body
    )
    if node.type is None:
        text = "bare `except:` also catches KeyboardInterrupt and SystemExit; catch `Exception` (or narrower)"
        if swallowed:
            text += ", and do not silently discard the error"
        report.findings.append(Finding("bare-except", "major", "correctness", node.lineno, text, node.end_lineno))
        line = lines[node.lineno - 1]
        head = line[node.col_offset :]
        if head.startswith("except") and head[6:].lstrip().startswith(":"):
            colon = head.index(":")
            fixed = line[: node.col_offset] + "except Exception" + head[colon:]
            report.edits.append(LineEdit(node.lineno, fixed, REWRITE, "bare-except"))
        return
    names = [node.type] if not isinstance(node.type, ast.Tuple) else list(node.type.elts)
    broad = any(isinstance(n, ast.Name) and n.id in _BROAD for n in names)
    if broad and swallowed:
        text = f"`except {ast.unparse(node.type)}` swallows every error silently; log it, re-raise or narrow it"
        report.findings.append(
            Finding("swallowed-exception", "major", "correctness", node.lineno, text, node.end_lineno)
        )


def cyclomatic_complexity(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """McCabe complexity of one function: 1 + branches + boolean operators + comprehension clauses.

    Nested functions, classes and lambdas count on their own, not in their parent.
    """
    count = 1
    stack = list(ast.iter_child_nodes(function))
    while stack:
        node = stack.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _BRANCHES):
            count += 1
        elif isinstance(node, ast.BoolOp):
            count += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            count += 1 + len(node.ifs)
        stack.extend(ast.iter_child_nodes(node))
    return count


def _complexity(
    file: ReviewFile, node: ast.FunctionDef | ast.AsyncFunctionDef, threshold: int, report: PythonReport
) -> None:
    end = node.end_lineno or node.lineno
    if file.changed_lines is not None and not any(line in file.changed_lines for line in range(node.lineno, end + 1)):
        return
    value = cyclomatic_complexity(node)
    if value <= threshold:
        return
    severity: Severity = "major" if value > 2 * threshold else "minor"
    text = f"`{node.name}` has cyclomatic complexity {value} (limit {threshold}); split it into smaller functions"
    report.findings.append(Finding("complexity", severity, "maintainability", node.lineno, text, end))


def _debug_call(
    file: ReviewFile, node: ast.Call, lines: list[str], parents: dict, report: PythonReport, *, is_test: bool
) -> None:
    if not file.in_scope(node.lineno):
        return
    func = node.func
    debugger = (isinstance(func, ast.Name) and func.id == "breakpoint") or (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and (func.value.id, func.attr) in _DEBUGGERS
    )
    if debugger:
        text = f"`{ast.unparse(func)}()` left in: it stops the program waiting for a debugger"
        report.findings.append(Finding("debugger", "major", "correctness", node.lineno, text))
        statement = parents.get(node)
        if isinstance(statement, ast.Expr) and _alone_on_line(statement, lines):
            report.edits.append(_removal(statement, lines, parents, "debugger"))
    elif isinstance(func, ast.Name) and func.id == "print" and not is_test and not file.path.endswith("__main__.py"):
        text = "`print()` left in library code; use logging (stdout may be a protocol stream)"
        report.findings.append(Finding("print-statement", "minor", "maintainability", node.lineno, text))


def _string_lines(source: str) -> frozenset[int]:
    """Lines that end inside a multi-line string literal."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.STRING and token.end[0] > token.start[0]:
                inside.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    return frozenset(inside)
