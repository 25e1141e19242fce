"""Chunk vectors in the configured vector store: one collection per embedder id (vectors of two embedders are
never compared), points keyed by chunk id with the connector and file in the payload.

An id of letters, digits and hyphens between slashes (``local/all-MiniLM-L6-v2-int8/384``) names its collection
plainly, and the name maps back to that id alone. Any other id's collection name also carries a digest of the exact
id, so two ids that read alike once sanitised (``rev/v1.0/64`` and ``rev/v1_0/64``) own two collections: an embedder
never reads or writes another's vectors."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from gateway.api import Embedder, Filter, ScoredPoint, VectorPoint, VectorStore

__all__ = ["PREFIX", "ChunkVectors", "collection_name"]

PREFIX = "context__"
_PLAIN_ID = re.compile(r"[A-Za-z0-9-]+(?:/[A-Za-z0-9-]+)*")
"""Ids whose sanitised name is unambiguous: no underscore, no other punctuation, no empty part."""


def collection_name(embedder_id: str) -> str:
    """``context__local_all-MiniLM-L6-v2-int8_384`` for a plain id; ``context__rev_v1_0_64__<12 hex digits of the
    id's SHA-256>`` for any other."""
    if _PLAIN_ID.fullmatch(embedder_id):
        return PREFIX + embedder_id.replace("/", "_")
    digest = hashlib.sha256(embedder_id.encode("utf-8")).hexdigest()[:12]
    return f"{PREFIX}{re.sub(r'[^A-Za-z0-9_-]+', '_', embedder_id)[:100]}__{digest}"


class ChunkVectors:
    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self._ready: set[str] = set()

    async def ensure(self, embedder: Embedder) -> str:
        name = collection_name(embedder.id)
        if name not in self._ready:
            await self.store.ensure_collection(
                name, dimension=embedder.dimension, indexed_fields={"connector_id": "keyword", "file_id": "keyword"}
            )
            self._ready.add(name)
        return name

    async def upsert(self, embedder: Embedder, points: Sequence[VectorPoint]) -> None:
        if points:
            await self.store.upsert(await self.ensure(embedder), points)

    async def delete(self, chunk_ids: Sequence[str], embedder_ids: Sequence[str]) -> None:
        if not chunk_ids:
            return
        existing = set(await self.store.list_collections())
        for embedder_id in embedder_ids:
            name = collection_name(embedder_id)
            if name in existing:
                await self.store.delete(name, list(chunk_ids))

    async def delete_everywhere(self, chunk_ids: Sequence[str]) -> None:
        """Delete chunk vectors from every context collection (whichever embedders made them)."""
        if not chunk_ids:
            return
        for name in await self.store.list_collections():
            if name.startswith(PREFIX):
                await self.store.delete(name, list(chunk_ids))

    async def _exists(self, name: str) -> bool:
        if name in self._ready:
            return True
        if name in set(await self.store.list_collections()):
            self._ready.add(name)
            return True
        return False

    async def query(
        self, embedder_id: str, vector: Sequence[float], *, limit: int, connector_ids: Sequence[str]
    ) -> list[ScoredPoint]:
        """The nearest chunks of ``connector_ids`` among ``embedder_id``'s own vectors (none when it has none)."""
        name = collection_name(embedder_id)
        if not await self._exists(name):
            return []
        flt: Filter = {"connector_id": list(connector_ids)}
        return await self.store.query(name, vector, limit=limit, filter=flt)

    async def count(self, embedder_id: str, connector_ids: Sequence[str]) -> int:
        """How many vectors ``embedder_id`` has stored for the chunks of ``connector_ids``."""
        name = collection_name(embedder_id)
        if not connector_ids or not await self._exists(name):
            return 0
        return await self.store.count(name, filter={"connector_id": list(connector_ids)})
