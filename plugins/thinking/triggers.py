"""When a thought asks for an audit: the spec's trigger heuristics, tuned not to fire on prose.

Triggers, in order: a ```` ```gan-config ```` block; a fenced code block; diff markers (``diff --git``, a hunk
header ``@@ -a,b +c,d @@``, or a ``--- a/x`` / ``+++ b/x`` header pair); programming tokens. Lines that merely
start with ``-`` or ``+`` are not diff markers (that is a Markdown list), and a hyphen in prose is nothing.

Programming tokens are counted line by line: one *strong* construct (``def f(``, ``class X:``, ``import x`` at
the start of a line, ``function f(``, ``const x =``, ``#include <``, a statement ending in ``;``...) triggers;
otherwise at least two different *weak* signals on at least two lines (comparison operators, calls like
``name(arg)``, lines ending in ``{``/``}``/``:``, ``&&``/``||``...) are needed; a line that reads as a sentence (a
capitalised word, five words or more, a full stop at the end) gives no weak signal: its ``x == y`` or ``check(pair)``
is code mentioned in prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gateway.api import source_lines

_FENCE_OPEN = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}+|~{3,}+)(?P<info>[^`\n]*)$")
"""Possessive: giving fence characters back to the info string can never help (``~~~...~``` would be quadratic)."""

DIFF_HEADER = re.compile(r"^diff --git \S", re.MULTILINE)
HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@", re.MULTILINE)
_FILE_HEADERS = re.compile(r"^--- \S.*\n\+\+\+ \S", re.MULTILINE)

# Each pattern runs on every line of a thought of up to ``max_thought_chars``: none lets two quantifiers share the
# same characters (``\s*;?\s*``, ``\.*[\w.]*``), which would cost the square of a long blank or dotted run.
# tests/plugins/thinking/test_triggers_linear.py checks them against the forms they replaced.
_STRONG = [
    re.compile(p)
    for p in (
        r"^\s*(async\s+)?def\s+\w+\s*\(",
        r"^\s*class\s+\w+(\s*[(:{]|\s+(extends|implements)\s)",
        r"^\s*from(\s+[\w.]++\s+|\s\s+)import\s+(\w+|\(|\*)",
        r"^\s*import\s+[\w.]++(\s+as\s+\w+)?\s*(;\s*)?$",
        r"^\s*import\s.+\sfrom\s+['\"]",
        r"^\s*#include\s*[<\"]",
        r"^\s*(export\s+)?(async\s+)?function\s*(\*\s*)?(\w+\s*)?\(",
        r"^\s*(export\s+)?(const|let|var)\s+\w+\s*(:\s*[\w<>\[\]]+\s*)?=",
        r"^\s*(pub\s+)?fn\s+\w+\s*[<(]",
        r"^\s*func\s+(\(\w+\s+\*?\w+\)\s*)?\w+\s*\(",
        r"^\s*(public|private|protected)\s+(static\s+)?[\w<>\[\],]+\s+\w+\s*\(",
        r"^\s*(if|while|for|switch)\s*\(.*\)\s*\{\s*$",
        r"^\s*}\s*(else|catch|finally)\b",
        r"^\s*return\b[^.]*;\s*$",
        r"^\s*(SELECT|INSERT|UPDATE|DELETE)\s.+\s(FROM|INTO|SET|WHERE)\s",
        r"^\s*[\w.\[\]]+\s*\(.*\)\s*;\s*$",
        r"\b(console\.log|System\.out\.println|printf|fmt\.Println)\s*\(",
        r"^\s*((try|finally|else)\s*|except\b.*):\s*$",
        r"=>\s*\{",
    )
]
_CHAIN = re.compile(r"\b[A-Za-z_]\w*+(?:\.\w++)*+(?P<call>\([^()\s]*\))?")


def _has_call(line: str) -> bool:
    """``name(arg)`` or ``a.b.c()`` somewhere in ``line``. Each dotted name is matched once, whole, whether a call
    follows or not: searching for ``name(`` alone would rescan a long ``a.b.c.d...`` from each of its names."""
    return any(match["call"] for match in _CHAIN.finditer(line))


_WEAK: dict[str, Callable[[str], object]] = {
    "comparison": re.compile(r"[\w)\]]\s*(==|!=|<=|>=|===|!==)\s*[\w(\"'\[-]").search,
    "logic": re.compile(r"&&|\|\|").search,
    "call": _has_call,
    "block-end": re.compile(r"[{};]\s*$").search,
    "python-block": re.compile(r"^\s*(if|elif|for|while|with)\s.+:\s*$").search,
    "assignment": re.compile(r"^\s*[A-Za-z_][\w.]*(\[[^\]]*\])?\s*[+\-*/]?=\s*[\w\"'\[{(]").search,
    "attribute": re.compile(r"\b[a-z_]\w*\.[a-z_]\w*\.[a-z_]\w*\b").search,
    "indented": re.compile(r"^(    |\t)+\S").search,
}


@dataclass(frozen=True)
class Fence:
    """A fenced block: its info string, its body, and the thought line its body starts on (1-based)."""

    info: str
    body: str
    start_line: int
    closed: bool = True

    @property
    def language(self) -> str:
        return self.info.strip().split(maxsplit=1)[0].lower() if self.info.strip() else ""


def fenced_blocks(text: str) -> list[Fence]:
    """The fenced code blocks of a Markdown text (CommonMark fences; an unclosed fence runs to the end).

    A fence indented by N spaces (one inside a list item: ``1. Add it:`` then the fence under the item's text) has
    up to N spaces of indentation removed from each line of its body, as CommonMark does.
    """
    lines = source_lines(text)
    blocks: list[Fence] = []
    index = 0
    while index < len(lines):
        opening = _FENCE_OPEN.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, indent = opening.group("fence"), len(opening.group("indent"))
        # CommonMark: a closing fence is indented at most three spaces past its opening (a fence further in, in a
        # docstring's Markdown example say, is the block's own text)
        closing = re.compile(rf"^ {{0,{indent + 3}}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        body_start = index + 1
        end = body_start
        while end < len(lines) and not closing.match(lines[end]):
            end += 1
        body = "\n".join(_dedent(line, indent) for line in lines[body_start:end])
        blocks.append(
            Fence(opening.group("info").strip(), body + "\n" if body else "", body_start + 1, end < len(lines))
        )
        index = end + 1
    return blocks


def _dedent(line: str, spaces: int) -> str:
    kept = len(line) - len(line.lstrip(" "))
    return line[min(kept, spaces) :]


def outside_fences(text: str) -> str:
    """``text`` with every fenced block blanked out (line numbers are kept)."""
    lines = source_lines(text)
    for block in fenced_blocks(text):
        first = block.start_line - 2
        last = block.start_line - 1 + len(source_lines(block.body)) + (1 if block.closed else 0)
        for number in range(max(first, 0), min(last, len(lines))):
            lines[number] = ""
    return "\n".join(lines)


def has_diff_markers(text: str) -> bool:
    return bool(DIFF_HEADER.search(text) or HUNK_HEADER.search(text) or _FILE_HEADERS.search(text))


def _reads_as_a_sentence(line: str) -> bool:
    """A capitalised word, four more words at least, and a full stop (``.``, ``!``, ``?``, ``…``) at the end: the
    weak signals of such a line are code mentioned in prose, not code."""
    words = line.split()
    if len(words) < 5 or words[-1][-1] not in ".!?…":
        return False
    first = words[0].rstrip(":,")
    return first.isalpha() and first[0].isupper() and first[1:] == first[1:].lower()


def looks_like_code(text: str) -> bool:
    """Programming tokens: one strong construct, or two kinds of weak signal on two lines or more."""
    weak_kinds: set[str] = set()
    weak_lines = 0
    for line in source_lines(text):
        if not line.strip():
            continue
        if any(pattern.search(line) for pattern in _STRONG):
            return True
        if _reads_as_a_sentence(line):  # "...whenever x == y holds", "...by calling check(pair) on..."
            continue
        kinds = {name for name, found in _WEAK.items() if found(line)}
        if kinds:
            weak_kinds |= kinds
            weak_lines += 1
    return len(weak_kinds) >= 2 and weak_lines >= 2


def audit_trigger(thought: str) -> str | None:
    """Why ``thought`` should be audited (``"gan-config"``, ``"code-block"``, ``"diff"``, ``"code"``), or ``None``."""
    blocks = fenced_blocks(thought)
    if any(block.language == "gan-config" for block in blocks):
        return "gan-config"
    if any(block.body.strip() for block in blocks):
        return "code-block"
    if has_diff_markers(thought):
        return "diff"
    if looks_like_code(thought):
        return "code"
    return None
