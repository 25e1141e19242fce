"""Indexing one connector: scan, drop what disappeared, re-chunk and re-embed only what changed, write.

A file-shaped connector is indexed by :meth:`Indexer.run` (a scan, then reads); a page of a hosted connector's
changes by :meth:`Indexer.apply_changes` (the documents come with their text, see :mod:`.documents`). A file is
unchanged when its size and modification time match the stored version (no read needed) or, failing
that, its content hash does; an unchanged file whose vectors are missing for an embedder of the chain (an outage
during the last run) is re-embedded. Each file version is written in its own transaction, its rows first and then
its vectors, and marked embedded last: a crash loses at most the files in flight, and the next run redoes exactly
those. Chunking runs on a worker thread; embedding goes through the gateway's embedder chain in batches.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, get_args

import anyio
import structlog

from gateway.api import (
    ChangedDocument,
    ChangePage,
    Connector,
    EmbeddingService,
    RelationalStore,
    SkippedDocument,
    SkipReason,
    SourceDocument,
    ToolError,
    VectorPoint,
)
from gateway_plugins.context.documents import prepare_changed
from gateway_plugins.context.file_versions import PreparedFile, prepare_file
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.vectors import ChunkVectors

log = structlog.get_logger(__name__)

__all__ = ["IndexOutcome", "Indexer", "PreparedFile", "document_hash"]


@dataclass
class IndexOutcome:
    documents: int = 0
    indexed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[str] = field(default_factory=list)
    stopped: bool = False
    skipped: list[SkippedDocument] = field(default_factory=list)
    """Offered by the scan, refused by the read (changed in between): left out, any stored version removed."""


Progress = Callable[[int, str | None], Awaitable[None]]
"""``progress(documents done in this connector, current path)``; raising stops the run."""


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
        outcome.removed = await self._remove([state["id"] for path, state in states.items() if path not in present])
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
                reason = (exc.details or {}).get("reason")
                reason = reason if reason in get_args(SkipReason) else "unreadable"
                outcome.skipped.append(SkippedDocument(document.path, reason))
                if state is not None and not exc.retryable:  # the source refuses it now: never serve it stale
                    outcome.removed += await self._remove([state["id"]])  # (a passing outage keeps what is stored)
                done += 1
                continue
            digest = hashlib.sha256(content.text.encode("utf-8")).hexdigest()
            if not force and state is not None and state["content_hash"] == digest and state["embedded"] == wanted:
                outcome.unchanged += 1
                done += 1
                await progress(done, document.path)
                continue
            prepared = await anyio.to_thread.run_sync(
                prepare_file,
                connector_id,
                document,
                content.text,
                digest,
                state["id"] if state else None,
                self.max_embed_chars,
                self.embed_all,
            )
            prepared.same_content = state is not None and state["content_hash"] == digest
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

    async def apply_changes(self, connector_id: str, page: ChangePage, *, force: bool, outcome: IndexOutcome) -> None:
        """Store one page of a hosted connector's changes: deleted paths removed, new and changed documents
        written and embedded (an unchanged one, offered again, is skipped by its hash unless ``force``). Returns once
        everything of the page is stored, vectors included: the caller stores the cursor after that."""
        latest: dict[str, ChangedDocument] = {}
        for document in page.documents:
            latest[document.path] = document  # a page may offer a document twice: the later version wins
        states = await self.repo.file_states(self.store, connector_id, [*latest, *page.deleted])
        outcome.removed += await self._remove(
            [states[path]["id"] for path in page.deleted if path in states and path not in latest]
        )
        wanted = " ".join(self.embedder_ids())
        pending: list[PreparedFile] = []
        pending_chunks = 0
        seen: list[str] = []
        for document in latest.values():
            outcome.documents += 1
            digest = document_hash(document)
            state = states.get(document.path)
            if not force and state is not None and state["content_hash"] == digest and state["embedded"] == wanted:
                outcome.unchanged += 1
                seen.append(state["id"])
                continue
            source, file_row, chunk_rows, texts, document_row, link_rows = await anyio.to_thread.run_sync(
                prepare_changed, connector_id, document, digest, self.max_embed_chars
            )
            replaces = state["id"] if state else None
            same = state is not None and state["content_hash"] == digest
            pending.append(PreparedFile(source, file_row, chunk_rows, texts, replaces, document_row, link_rows, same))
            pending_chunks += len(chunk_rows)
            if pending_chunks >= self.embed_batch:
                await self._flush(pending, outcome)
                pending, pending_chunks = [], 0
        if pending:
            await self._flush(pending, outcome)
        if seen:
            await self.repo.touch_files(self.store, seen)

    async def remove_unseen(self, connector_id: str, since: datetime) -> int:
        """Remove a connector's documents not offered (written or confirmed) since ``since``: what a full sync of a
        hosted source did not find any more (deleted, moved, out of the connector's scope)."""
        rows = await self.store.fetch_all(
            "SELECT id FROM ctx_files WHERE connector_id = :c AND indexed_at < :since",
            {"c": connector_id, "since": since},
        )
        return await self._remove([row["id"] for row in rows])

    async def _remove(self, gone: list[str]) -> int:
        """Remove stored file versions (rows, vectors, search index); returns how many."""
        if gone:
            async with self.store.transaction() as tx:
                removed_chunks = await self.repo.remove_files(tx, gone)
            await self.vectors.delete_everywhere(removed_chunks)
            for file_id in gone:
                self.on_removed(file_id)
        return len(gone)

    async def _stored_rows(self, connector_id: str) -> dict[str, dict[str, Any]]:
        rows = await self.store.fetch_all(
            "SELECT path, size, last_modified, embedded FROM ctx_files WHERE connector_id = :c", {"c": connector_id}
        )
        return {row["path"]: row for row in rows}

    async def _flush(self, batch: list[PreparedFile], outcome: IndexOutcome) -> int:
        """Write a batch of files, embed them, store their vectors.

        A new or changed file is searchable lexically once its rows are written, before it is embedded (its old
        version's vectors go with the old rows); one of unchanged content (a forced re-index) is replaced only once
        its vectors are computed, so that if the embedders fail its stored version keeps answering, vectors and all.
        A file is marked embedded only after its vectors are stored: a crash in between leaves a file the next run
        re-embeds. Tests, examples and prose are left to lexical search unless ``embed_all``."""
        hold = self.embeddings is not None
        for prepared in batch:  # a changed file's old chunks go with their vectors at once, as a removal does
            if not (hold and prepared.same_content):
                await self._replace(prepared, outcome)
        computed = await self._compute(batch)
        for prepared in batch:
            if hold and prepared.same_content:
                await self._replace(prepared, outcome)
        await self._store_vectors(batch, *computed)
        return len(batch)

    async def _replace(self, prepared: PreparedFile, outcome: IndexOutcome) -> None:
        """Write a file version and delete the vectors of the chunks it replaced (shielded: once the rows are gone,
        nothing would ever name those vectors again)."""
        replaced = await self._write(prepared, outcome)
        with anyio.CancelScope(shield=True):
            await self.vectors.delete_everywhere(replaced)

    async def _write(self, prepared: PreparedFile, outcome: IndexOutcome) -> list[str]:
        """Store a file version's rows in place of the one it replaces; returns the replaced chunk ids."""
        async with self.store.transaction() as tx:
            replaced = await self.repo.write_file(
                tx,
                prepared.file_row,
                prepared.chunk_rows,
                prepared.replaces,
                document_row=prepared.document_row,
                link_rows=prepared.link_rows,
            )
        if prepared.replaces:
            self.on_removed(prepared.replaces)
        self.on_written(prepared.file_row, prepared.chunk_rows)
        outcome.indexed += 1
        return replaced

    async def _compute(self, batch: list[PreparedFile]) -> tuple[dict[str, list[list[float]]], list[str]]:
        """The vectors of a batch's texts by embedder id, and the embedders that served."""
        if self.embeddings is None:
            return {}, []
        texts = [text for prepared in batch for text in prepared.texts]
        if not texts:
            return {}, self.embedder_ids()
        result = await self.embeddings().embed_documents(texts)
        return dict(result.vectors), sorted(result.vectors)

    async def _store_vectors(self, batch: list[PreparedFile], vectors: dict[str, Any], served: list[str]) -> None:
        """Store a batch's vectors (from :meth:`_compute`); each file is marked embedded after its own."""
        if self.embeddings is None:
            return
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

    async def embed_missing(self, connector_id: str) -> int:
        """Embed the stored hosted documents of a connector that lack vectors of the current embedder chain (an
        embedder was down during their sync, or was added since): a hosted source does not offer them again."""
        if self.embeddings is None:
            return 0
        wanted = " ".join(self.embedder_ids())
        rows = await self.store.fetch_all(
            "SELECT f.id, f.connector_id, f.path, f.size, f.last_modified, f.source_type, d.title FROM ctx_files f "
            "JOIN ctx_documents d ON d.file_id = f.id WHERE f.connector_id = :c AND f.embedded <> :w ORDER BY f.path",
            {"c": connector_id, "w": wanted},
        )
        for start in range(0, len(rows), max(1, self.embed_batch // 4)):
            files = rows[start : start + max(1, self.embed_batch // 4)]
            chunks = await self.repo.chunks_of_files(self.store, [f["id"] for f in files], with_content=True)
            batch = []
            for row in files:
                own = [c for c in chunks if c["file_id"] == row["id"]]
                source = SourceDocument(row["path"], row["size"], row["last_modified"], row["source_type"])
                texts = [f"{row['title']}\n{c['content']}"[: self.max_embed_chars] for c in own]
                batch.append(PreparedFile(source, {"id": row["id"], "connector_id": connector_id}, own, texts, None))
            await self._store_vectors(batch, *await self._compute(batch))
        return len(rows)


def _same_time(stored: Any, current: datetime) -> bool:
    if isinstance(stored, str):
        stored = datetime.fromisoformat(stored)
    return isinstance(stored, datetime) and abs((stored - current).total_seconds()) < 1e-3


def document_hash(document: ChangedDocument) -> str:
    """What decides whether a hosted document changed: its text and everything stored beside it."""
    parts = [document.title, document.url or "", document.state or "", *document.keys, "\0", *document.files]
    digest = hashlib.sha256(document.text.encode("utf-8"))
    digest.update("\n".join(parts).encode("utf-8"))
    return digest.hexdigest()
