"""A hosted connector's document (an issue, a pull request, a ticket, a thread) made ready to store.

Each section (the issue itself, each comment, a reply, the list of changed files) becomes its own chunk, split in
windows when long, with line numbers counted in the whole document; the first chunk carries the document's key as
its symbol (``PROJ-7``, ``org/repo#42``), the others their heading (``Comment by ada on 2025-01-02``). Every chunk's
lexical tokens include the document's title, so a comment is found by what the issue is about. The links stored
beside it say which ticket ids it is (``key``), which ones its text mentions (``mentions``; a bare ``#12`` in a
GitHub document also counts as ``org/repo#12``) and which repository paths it changes (``changes``).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from gateway.api import ChangedDocument, SourceDocument
from gateway_plugins.context.chunking.text import TEXT_WINDOW
from gateway_plugins.context.refs import ticket_ids
from gateway_plugins.context.tokens import tokenize

__all__ = ["document_links", "prepare_changed"]


def document_links(document: ChangedDocument) -> dict[str, list[str]]:
    """``key``/``mentions``/``changes`` values of a document (ids normalised as :mod:`.refs` does)."""
    keys = list(dict.fromkeys(document.keys))
    repos = [key.split("#", 1)[0] for key in keys if "/" in key and "#" in key]
    mentions: list[str] = []
    for found in ticket_ids(f"{document.title}\n{document.text}"):
        mentions.append(found)
        if found.startswith("#"):
            mentions.extend(f"{repo}{found}" for repo in repos)
    own = set(keys)
    return {
        "key": keys,
        "mentions": [m for m in dict.fromkeys(mentions) if m not in own],
        "changes": list(dict.fromkeys(document.files)),
    }


def _chunks(document: ChangedDocument) -> list[tuple[str, str | None, int, int, str]]:
    """(kind, symbol, start line, end line, content) of each chunk, lines counted in :attr:`ChangedDocument.text`."""
    chunks = []
    line = 1
    for number, section in enumerate(document.sections):
        lines = section.text.splitlines() or [""]
        for start in range(0, len(lines), TEXT_WINDOW):
            body = lines[start : start + TEXT_WINDOW]
            if not any(text.strip() for text in body):
                continue
            symbol = (document.keys[0] if document.keys else document.title) if number == 0 and start == 0 else None
            chunks.append(
                (section.kind, symbol or section.heading, line + start, line + start + len(body) - 1, "\n".join(body))
            )
        line += len(lines) + 1  # the blank line between sections
    return chunks


def prepare_changed(
    connector_id: str, document: ChangedDocument, content_hash: str, max_embed_chars: int
) -> tuple[SourceDocument, dict[str, Any], list[dict[str, Any]], list[str], dict[str, Any], list[dict[str, Any]]]:
    """(source document, file row, chunk rows, texts to embed, document row, link rows) of a hosted document."""
    text = document.text
    file_id = str(uuid.uuid4())
    context_tokens = tokenize(document.title) + tokenize(document.path)
    chunk_rows: list[dict[str, Any]] = []
    texts: list[str] = []
    for ordinal, (kind, symbol, start, end, content) in enumerate(_chunks(document)):
        chunk_rows.append(
            {
                "id": str(uuid.uuid4()),
                "file_id": file_id,
                "ordinal": ordinal,
                "kind": kind[:12],
                "symbol": symbol,
                "start_line": start,
                "end_line": end,
                "content": content,
                "tokens": " ".join(tokenize(content) + context_tokens),
                "strings": [],
            }
        )
        texts.append(f"{document.title}\n{content}"[:max_embed_chars])
    source = SourceDocument(
        path=document.path,
        size=len(text.encode("utf-8")),
        last_modified=document.last_modified,
        source_type=document.source_type,
    )
    file_row = {
        "id": file_id,
        "connector_id": connector_id,
        "path": document.path,
        "content_hash": content_hash,
        "size": source.size,
        "language": "markdown" if document.mime_type == "text/markdown" else "text",
        "source_type": document.source_type,
        "last_modified": document.last_modified,
        "imports": "",
        "chunk_count": len(chunk_rows),
        "embedded": "",
        "seq": 0,
        "indexed_at": datetime.now(UTC),
    }
    document_row = {
        "file_id": file_id,
        "connector_id": connector_id,
        "kind": (document.sections[0].kind if document.sections else "document")[:30],
        "title": document.title,
        "url": document.url,
        "state": (document.state or None) and document.state[:100],
        "author": (document.author or None) and document.author[:200],
    }
    link_rows = [
        {"file_id": file_id, "connector_id": connector_id, "relation": relation, "value": value[:1000]}
        for relation, values in document_links(document).items()
        for value in values
    ]
    return source, file_row, chunk_rows, texts, document_row, link_rows
