"""Chunking of prose and other text: markdown and reStructuredText by section heading, anything else in windows."""

from __future__ import annotations

import re

from gateway_plugins.context.chunking.model import Chunk

__all__ = ["TEXT_WINDOW", "chunk_markdown", "chunk_rst", "chunk_text"]

TEXT_WINDOW = 50
"""Lines per window of a plain text file, and the most lines of one section before it is split."""

_MD_HEADING = re.compile(r"^#{1,6}\s+\S")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+:.])\1{2,}\s*$")


def _sections(lines: list[str], starts: list[int], language: str, kind: str) -> list[Chunk]:
    bounds = sorted({0, *starts})
    chunks: list[Chunk] = []
    for i, start in enumerate(bounds):
        end = bounds[i + 1] if i + 1 < len(bounds) else len(lines)
        for window in range(start, end, TEXT_WINDOW):
            stop = min(end, window + TEXT_WINDOW)
            body = lines[window:stop]
            if not any(line.strip() for line in body):
                continue
            heading = lines[start].strip().lstrip("#").strip() if start < len(lines) else ""
            chunks.append(Chunk(kind, heading[:200] or None, window + 1, stop, "\n".join(body), language))
    return chunks


def chunk_markdown(text: str) -> list[Chunk]:
    lines = text.splitlines()
    starts, fenced = [], False
    for number, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and _MD_HEADING.match(line):
            starts.append(number)
    return _sections(lines, starts, "markdown", "doc")


def chunk_rst(text: str) -> list[Chunk]:
    lines = text.splitlines()
    starts = [
        number - 1
        for number in range(1, len(lines))
        if _RST_UNDERLINE.match(lines[number])
        and lines[number - 1].strip()
        and not _RST_UNDERLINE.match(lines[number - 1])
    ]
    return _sections(lines, starts, "rst", "doc")


def chunk_text(text: str, language: str = "text") -> list[Chunk]:
    return _sections(text.splitlines(), [], language, "text")
