"""Indexing one connector: scan, drop what disappeared, re-chunk and re-embed only what changed, write.

A file is unchanged when its size and modification time match the stored version (no read needed) or, failing
that, its content hash does; an unchanged file whose vectors are missing for an embedder of the chain (an outage
during the last run) is re-embedded. Each file version is written in its own transaction, its rows first and then
its vectors, and marked embedded last: a crash loses at most the files in flight, and the next run redoes exactly
those. Chunking runs on a worker thread; embedding goes through the gateway's embedder chain in batches.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import anyio
import structlog

from gateway.api import Connector, EmbeddingService, RelationalStore, SourceDocument, ToolError, VectorPoint
from gateway_plugins.context.chunking import chunk_file, language_of
from gateway_plugins.context.paths import is_secondary
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.tokens import tokenize
from gateway_plugins.context.vectors import ChunkVectors

log = structlog.get_logger(__name__)

__all__ = ["IndexOutcome", "Indexer", "PreparedFile"]


@dataclass
class PreparedFile:
    """A file version ready to write: its row, its chunk rows and the texts to embed."""

    document: SourceDocument
    file_row: dict[str, Any]
    chunk_rows: list[dict[str, Any]]
    texts: list[str]
    replaces: str | None


@dataclass
class IndexOutcome:
    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: bool = False


Progress = Callable[[int, str | None], Awaitable[None]]
"""``progress(documents done in this connector, current path)``; raising stops the run."""


def _prepare(
    connector_id: str,
    document: SourceDocument,
    text: str,
    content_hash: str,
    replaces: str | None,
    max_embed_chars: int,
    embed_all: bool,
) -> PreparedFile:
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


class Indexer:
    """Writes connector documents into the store, the vector store and (through ``on_written``) the search index."""

    def __init__(
        self,
        store: RelationalStore,
        repo: Repository,
        vectors: ChunkVectors,
        embeddings: Callable[[], EmbeddingService] | None,
        *,
        on_written: Callable[[dict[str, Any], list[dict[str, Any]]], None],
        on_removed: Callable[[str], None],
        embed_batch: int = 64,
        max_embed_chars: int = 2000,
        embed_all: bool = False,
    ) -> None:
        self.store = store
        self.repo = repo
        self.vectors = vectors
        self.embeddings = embeddings
        self.on_written = on_written
        self.on_removed = on_removed
        self.embed_batch = embed_batch
        self.max_embed_chars = max_embed_chars
        self.embed_all = embed_all

    def embedder_ids(self) -> list[str]:
        if self.embeddings is None:
            return []
        return sorted(e.id for e in self.embeddings().embedders)

    async def run(
        self,
        connector_id: str,
        connector: Connector,
        documents: Sequence[SourceDocument],
        *,
        force: bool,
        progress: Progress,
        should_stop: Callable[[], bool],
    ) -> IndexOutcome:
        outcome = IndexOutcome(documents=len(documents))
        states = await self.repo.file_states(self.store, connector_id)
        present = {d.path for d in documents}
        gone = [state["id"] for path, state in states.items() if path not in present]
        if gone:
            async with self.store.transaction() as tx:
                removed_chunks = await self.repo.remove_files(tx, gone)
            await self.vectors.delete_everywhere(removed_chunks)
            for file_id in gone:
                self.on_removed(file_id)
            outcome.removed = len(gone)
        wanted = " ".join(self.embedder_ids())
        full = await self._stored_rows(connector_id) if not force else {}
        pending: list[PreparedFile] = []
        pending_chunks = 0
        done = 0
        for document in sorted(documents, key=lambda d: d.path):
            if should_stop():
                outcome.stopped = True
                break
            state = states.get(document.path)
            stored = full.get(document.path)
            if (
                not force
                and stored is not None
                and stored["size"] == document.size
                and _same_time(stored["last_modified"], document.last_modified)
                and stored["embedded"] == wanted
            ):
                outcome.unchanged += 1
                done += 1
                await progress(done, document.path)
                continue
            try:
                content = await connector.read(document.path)
            except ToolError as exc:
                outcome.failed.append(f"{document.path}: {exc.message}")
                done += 1
                continue
            digest = hashlib.sha256(content.text.encode("utf-8")).hexdigest()
            if not force and state is not None and state["content_hash"] == digest and state["embedded"] == wanted:
                outcome.unchanged += 1
                done += 1
                await progress(done, document.path)
                continue
            prepared = await anyio.to_thread.run_sync(
                _prepare,
                connector_id,
                document,
                content.text,
                digest,
                state["id"] if state else None,
                self.max_embed_chars,
                self.embed_all,
            )
            pending.append(prepared)
            pending_chunks += len(prepared.chunk_rows)
            if pending_chunks >= self.embed_batch:
                done += await self._flush(pending, outcome)
                pending, pending_chunks = [], 0
                await progress(done, document.path)
        if pending:
            done += await self._flush(pending, outcome)
            await progress(done, None)
        return outcome

    async def _stored_rows(self, connector_id: str) -> dict[str, dict[str, Any]]:
        rows = await self.store.fetch_all(
            "SELECT path, size, last_modified, embedded FROM ctx_files WHERE connector_id = :c", {"c": connector_id}
        )
        return {row["path"]: row for row in rows}

    async def _flush(self, batch: list[PreparedFile], outcome: IndexOutcome) -> int:
        """Write a batch of files, then embed them and write their vectors.

        Each file is searchable lexically as soon as its rows are written; it is marked embedded (complete for an
        embedder) only after its vectors are stored, so a crash in between leaves a file the next run re-embeds.
        Tests, examples and prose are left to lexical search unless ``embed_all``."""
        for prepared in batch:
            async with self.store.transaction() as tx:
                replaced = await self.repo.write_file(tx, prepared.file_row, prepared.chunk_rows, prepared.replaces)
            await self.vectors.delete_everywhere(replaced)
            if prepared.replaces:
                self.on_removed(prepared.replaces)
            self.on_written(prepared.file_row, prepared.chunk_rows)
            outcome.indexed += 1
        if self.embeddings is None:
            return len(batch)
        texts = [text for prepared in batch for text in prepared.texts]
        vectors: dict[str, list[list[float]]] = {}
        if texts:
            result = await self.embeddings().embed_documents(texts)
            vectors = dict(result.vectors)
            served = sorted(vectors)
        else:
            served = self.embedder_ids()
        embedders = {e.id: e for e in self.embeddings().embedders}
        offset = 0
        for prepared in batch:
            count = len(prepared.texts)
            payload = {"connector_id": prepared.file_row["connector_id"], "file_id": prepared.file_row["id"]}
            for embedder_id, all_vectors in vectors.items():
                if count:
                    points = [
                        VectorPoint(row["id"], vector, payload)
                        for row, vector in zip(prepared.chunk_rows, all_vectors[offset : offset + count], strict=True)
                    ]
                    await self.vectors.upsert(embedders[embedder_id], points)
            if served:
                await self.repo.mark_embedded(self.store, prepared.file_row["id"], served)
            offset += count
        return len(batch)


def _same_time(stored: Any, current: datetime) -> bool:
    if isinstance(stored, str):
        stored = datetime.fromisoformat(stored)
    return isinstance(stored, datetime) and abs((stored - current).total_seconds()) < 1e-3
