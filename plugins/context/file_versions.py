"""A file version ready to write: its row, its chunk rows (the file chunked) and the texts to embed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gateway.api import SourceDocument
from gateway_plugins.context.chunking import chunk_file, language_of
from gateway_plugins.context.paths import is_secondary
from gateway_plugins.context.tokens import tokenize

__all__ = ["PreparedFile", "prepare_file"]


@dataclass
class PreparedFile:
    """A file version ready to write: its row, its chunk rows and the texts to embed."""

    document: SourceDocument
    file_row: dict[str, Any]
    chunk_rows: list[dict[str, Any]]
    texts: list[str]
    replaces: str | None
    document_row: dict[str, Any] | None = None
    """A hosted document's facts (title, URL, state), stored beside it."""
    link_rows: list[dict[str, Any]] = field(default_factory=list)
    same_content: bool = False
    """It replaces a version of the same content (a forced re-index, vectors missing): until its own vectors are
    computed, the stored version, vectors and all, keeps answering searches."""


def prepare_file(
    connector_id: str,
    document: SourceDocument,
    text: str,
    content_hash: str,
    replaces: str | None,
    max_embed_chars: int,
    embed_all: bool,
) -> PreparedFile:
    """``document`` chunked, with its rows and (unless it is secondary and not ``embed_all``) its texts."""
    chunked = chunk_file(document.path, text)
    file_id = str(uuid.uuid4())
    path_tokens = tokenize(document.path)
    chunk_rows: list[dict[str, Any]] = []
    texts: list[str] = []
    embed = embed_all or not is_secondary(document.path)
    for ordinal, chunk in enumerate(chunked.chunks):
        chunk_rows.append(
            {
                "id": str(uuid.uuid4()),
                "file_id": file_id,
                "ordinal": ordinal,
                "kind": chunk.kind,
                "symbol": chunk.symbol,
                "start_line": chunk.start_line,
                "end_line": chunk.end_line,
                "content": chunk.content,
                "tokens": " ".join(tokenize(chunk.content) + path_tokens),
                "strings": list(chunk.strings[:50]),
            }
        )
        if embed:
            header = f"{document.path} {chunk.symbol or ''}".strip()
            texts.append(f"{header}\n{chunk.content}"[:max_embed_chars])
    now = datetime.now(UTC)
    file_row = {
        "id": file_id,
        "connector_id": connector_id,
        "path": document.path,
        "content_hash": content_hash,
        "size": document.size,
        "language": language_of(document.path),
        "source_type": document.source_type,
        "last_modified": document.last_modified,
        "imports": "\n".join(chunked.imports),
        "chunk_count": len(chunk_rows),
        "embedded": "",
        "seq": 0,
        "indexed_at": now,
    }
    return PreparedFile(document, file_row, chunk_rows, texts, replaces)
