"""What chunking produces: chunks with their qualified symbol and line span, and per-file facts (imports)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Chunk", "ChunkedFile"]


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of a file.

    ``kind``: ``function``, ``method``, ``class``, ``module`` (top-level code between definitions), ``doc`` (a
    markdown/rst section) or ``text`` (a window of another text file). ``symbol`` is the qualified name as the
    language writes it (``Flask.handle_user_exception``, ``res.send``, ``Layer.prototype.match``, ``Client.Do``,
    ``Vec::push``), ``None`` for module code and text. Lines are 1-based and inclusive.
    """

    kind: str
    symbol: str | None
    start_line: int
    end_line: int
    content: str
    language: str
    strings: tuple[str, ...] = ()
    """String literals of a code chunk (the text of messages it raises or formats)."""


@dataclass
class ChunkedFile:
    chunks: list[Chunk] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    """Module specifiers the file imports, as written (``.globals``, ``./router``, ``net/http``)."""
