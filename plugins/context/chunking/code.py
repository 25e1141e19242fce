"""Code chunking with tree-sitter: one chunk per function, method and class, named as the language writes it.

The walk is the same for every language; what differs (which nodes define something, how a name is qualified,
where a container's members live) is a :class:`Definitions` strategy per language in :mod:`.definitions`. A class
chunk holds the class's own lines (header, docstring, attributes) without its methods, which get chunks of their
own; top-level code between definitions becomes ``module`` chunks of at most :data:`MODULE_WINDOW` lines.

A definition's chunk starts at the comment block right above it (a JSDoc, a Go or Java doc comment), at every
depth: the doc comment of a class method describes the method, and left to the class chunk it would make the class
answer for what each of its methods does.
"""

from __future__ import annotations

import re
from typing import Any

from gateway_plugins.context.chunking.definitions import Definition, definitions_for
from gateway_plugins.context.chunking.languages import parser_for
from gateway_plugins.context.chunking.model import Chunk, ChunkedFile

__all__ = ["MODULE_WINDOW", "chunk_code"]

MODULE_WINDOW = 60
"""Most lines of one ``module`` chunk (top-level code between definitions)."""

_STRING_TYPES = frozenset(
    {"string", "template_string", "interpreted_string_literal", "raw_string_literal", "string_literal"}
)
_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
_CONCAT_TYPES = frozenset({"binary_expression", "binary_operator"})
"""``+`` expressions (JavaScript/TypeScript/Go/Java/Rust ``binary_expression``, Python ``binary_operator``)."""

_IMPORTS = {  # a line's leading blanks are [ \t]*, not \s*: \s crosses line ends (quadratic on blank runs)
    "python": (
        re.compile(r"^[ \t]*from\s+([.\w]+)\s+import\s+\(?([\w\s,]+)", re.M),
        re.compile(r"^[ \t]*import\s+([\w.]+)", re.M),
    ),
    "javascript": (
        re.compile(
            r"""require\(\s*['"]([^'"]+)['"]\s*\)|\bfrom\s+['"]([^'"]+)['"]|^[ \t]*import\s+['"]([^'"]+)['"]""", re.M
        ),
    ),
    "go": (re.compile(r'^[ \t]*(?:import\s+)?(?:\w+\s+)?"([\w./-]+)"\s*$', re.M),),
    "java": (re.compile(r"^[ \t]*import\s+(?:static\s+)?([\w.]+)", re.M),),
    "rust": (
        re.compile(r"^[ \t]*(?:pub\s+)?use\s+([\w:]+)", re.M),
        re.compile(r"^[ \t]*(?:pub\s+)?mod\s+(\w+)\s*;", re.M),
    ),
}


def _imports(language: str, text: str) -> list[str]:
    key = "javascript" if language in ("typescript", "tsx") else language
    found: list[str] = []
    for pattern in _IMPORTS.get(key, ()):
        for match in pattern.finditer(text):
            if key == "python" and match.re.pattern.startswith("^[ \\t]*from"):
                module = match.group(1)
                found.append(module)
                for name in match.group(2).replace("\n", " ").split(","):
                    name = name.strip().split(" ")[0]
                    if name and name != "*":
                        found.append(f"{module}.{name}" if not module.endswith(".") else f"{module}{name}")
            elif key == "rust" and "mod" in match.re.pattern:
                found.append(f"self::{match.group(1)}")
            else:
                found.append(next(g for g in match.groups() if g))
    return list(dict.fromkeys(found))


def _string_text(node: Any, source: bytes) -> str:
    text = source[node.start_byte : node.end_byte].decode("utf-8", "replace")
    return text.lstrip("rbuRBUfF").strip("'\"`")


def _plus_chain(node: Any) -> list[Any] | None:
    """The operands of the ``+`` chain ``node`` heads (``'Failed to lookup view "' + name``), else ``None``.

    The whole chain at once: a walk that took each nested ``+`` as a chain of its own would read an n-term sum n
    times (quadratic)."""
    if node.type not in _CONCAT_TYPES:
        return None
    operator = node.child_by_field_name("operator")
    if operator is None or operator.type != "+":
        return None
    operands: list[Any] = []
    stack = [node]
    while stack:
        current = stack.pop()
        operator = current.child_by_field_name("operator")
        if current.type in _CONCAT_TYPES and operator is not None and operator.type == "+":
            stack.extend(reversed([current.child_by_field_name("left"), current.child_by_field_name("right")]))
        elif current is not None:
            operands.append(current)
    return operands


def _strings(root: Any, source: bytes) -> list[tuple[int, str]]:
    """(line, text) of every string literal, quotes stripped, docstrings left out (the chunk's text has them: they
    document, while these are what code raises, logs or formats). A message built from pieces is one literal: Python's
    implicit concatenation (``"has no" " attribute"``) joins its parts, and a ``+`` chain puts ``{}`` where a
    non-literal operand goes, as a format placeholder would stand (``'Failed to lookup view "{}" in views {}'``)."""
    out: list[tuple[int, str]] = []
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "expression_statement" and node.named_child_count == 1:
            only = node.named_children[0]
            if only.type in _STRING_TYPES or only.type == "concatenated_string":
                continue  # a docstring or a directive ('use strict'): documentation, not a message
        if node.type in _STRING_TYPES or node.type == "concatenated_string":
            parts = [c for c in node.named_children if c.type in _STRING_TYPES] or [node]
            text = "".join(_string_text(part, source) for part in parts)
            if len(text) > 3:
                out.append((node.start_point[0] + 1, text))
            continue
        operands = _plus_chain(node)
        if operands is not None:
            if any(o.type in _STRING_TYPES for o in operands):
                text = "".join(_string_text(o, source) if o.type in _STRING_TYPES else "{}" for o in operands)
                if len(text) > 3:
                    out.append((node.start_point[0] + 1, text))
            stack.extend(o for o in operands if o.type not in _STRING_TYPES)  # literals inside calls, etc.
            continue
        stack.extend(node.children)
    return out


def _leading_comment_start(node: Any) -> int:
    """The first line of the comment block right above a definition (its documentation), else its own line."""
    start = node.start_point[0]
    sibling = node.prev_sibling
    while sibling is not None and sibling.type in _COMMENT_TYPES and sibling.end_point[0] >= start - 2:
        start = sibling.start_point[0]
        sibling = sibling.prev_sibling
    return start + 1


CROWDING_SLACK = 200
"""Characters of other code a definition's lines may carry before its chunk keeps only its own text."""


def _leaf_lines(node: Any, source: bytes, lines: list[str], start: int, end: int) -> list[str]:
    """The lines ``start``-``end`` of a definition (its documentation above it included), or, when those lines
    carry much other code (a minified bundle: thousands of functions on one line), the documentation lines and the
    definition's own text. Each chunk then holds its own code: the file's chunks stay about as large as the file."""
    body = lines[start - 1 : end]
    own = source[node.start_byte : node.end_byte]
    first = node.start_point[0] + 1
    if sum(len(line) + 1 for line in lines[first - 1 : end]) <= len(own) + CROWDING_SLACK:
        return body
    return [*lines[start - 1 : first - 1], own.decode("utf-8", "replace")]


def chunk_code(language: str, text: str) -> ChunkedFile:
    """Chunks and imports of a source file in one of the tree-sitter languages."""
    source = text.encode("utf-8")
    tree = parser_for(language).parse(source)
    lines = text.splitlines()
    n_lines = len(lines)
    found: list[Definition] = definitions_for(language).collect(tree.root_node, source)
    ordered = sorted(found, key=lambda d: d.depth)  # outer first: inner definitions take their lines over
    # Each line belongs to the innermost definition that spans it (-1: module level).
    owner = [-1] * (n_lines + 2)
    spans: list[tuple[int, int]] = []
    for index, definition in enumerate(ordered):
        start = _leading_comment_start(definition.node)
        end = definition.node.end_point[0] + 1
        spans.append((start, end))
        for line in range(start, end + 1):
            owner[line] = index
    strings: dict[int, list[str]] = {}
    for line, literal in _strings(tree.root_node, source):
        strings.setdefault(owner[line] if line < len(owner) else -1, []).append(literal)

    chunks: list[Chunk] = []
    for index, definition in enumerate(ordered):
        start, end = spans[index]
        if definition.leaf:
            body = _leaf_lines(definition.node, source, lines, start, end)
        else:  # a container: its own lines only (members have chunks of their own)
            body = [lines[i - 1] for i in range(start, end + 1) if owner[i] == index]
        chunks.append(
            Chunk(
                kind=definition.kind,
                symbol=definition.symbol,
                start_line=start,
                end_line=end,
                content="\n".join(body),
                language=language,
                strings=tuple(strings.get(index, ())),
            )
        )
    chunks.extend(_module_chunks(lines, owner, language, strings.get(-1, [])))
    chunks.sort(key=lambda c: (c.start_line, -c.end_line))
    return ChunkedFile(chunks=chunks, imports=_imports(language, text))


def _module_chunks(lines: list[str], owner: list[int], language: str, literals: list[str]) -> list[Chunk]:
    """Top-level code between definitions, in runs of at most :data:`MODULE_WINDOW` lines."""
    runs: list[list[int]] = []
    for number in range(1, len(lines) + 1):
        if owner[number] != -1:
            continue
        if runs and runs[-1][-1] == number - 1 and len(runs[-1]) < MODULE_WINDOW:
            runs[-1].append(number)
        else:
            runs.append([number])
    chunks = []
    for run in runs:
        kept = [n for n in run if lines[n - 1].strip()]
        if not kept:
            continue
        start, end = kept[0], kept[-1]
        content = "\n".join(lines[start - 1 : end])
        own = tuple(s for s in literals if s in content)
        chunks.append(Chunk("module", None, start, end, content, language, own))
    return chunks
