"""Turning a file into chunks: tree-sitter for code, headings for markdown/rst, windows for other text."""

from __future__ import annotations

from gateway_plugins.context.chunking.code import chunk_code
from gateway_plugins.context.chunking.languages import CODE_LANGUAGES, language_of
from gateway_plugins.context.chunking.model import Chunk, ChunkedFile
from gateway_plugins.context.chunking.text import chunk_markdown, chunk_rst, chunk_text

__all__ = ["Chunk", "ChunkedFile", "chunk_file", "language_of"]


def chunk_file(path: str, text: str) -> ChunkedFile:
    """The chunks (and, for code, the imports) of one file given its repository path and text."""
    language = language_of(path)
    if language in CODE_LANGUAGES:
        try:
            return chunk_code(language, text)
        except (ValueError, RecursionError):  # a grammar that cannot take this file: index it as text
            return ChunkedFile(chunks=chunk_text(text, language))
    if language == "markdown":
        return ChunkedFile(chunks=chunk_markdown(text))
    if language == "rst":
        return ChunkedFile(chunks=chunk_rst(text))
    return ChunkedFile(chunks=chunk_text(text, language))
