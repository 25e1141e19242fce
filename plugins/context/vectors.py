"""Chunk vectors in the configured vector store: one collection per embedder id (vectors of two embedders are
never compared), points keyed by chunk id with the connector and file in the payload."""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.api import Embedder, Filter, ScoredPoint, VectorPoint, VectorStore

__all__ = ["ChunkVectors", "collection_name"]


def collection_name(embedder_id: str) -> str:
    return "context__" + re.sub(r"[^A-Za-z0-9_-]+", "_", embedder_id)


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
            if name.startswith("context__"):
                await self.store.delete(name, list(chunk_ids))

    async def query(
        self, embedder_id: str, vector: Sequence[float], *, limit: int, connector_ids: Sequence[str]
    ) -> list[ScoredPoint]:
        name = collection_name(embedder_id)
        if name not in self._ready and name not in set(await self.store.list_collections()):
            return []
        self._ready.add(name)
        flt: Filter = {"connector_id": list(connector_ids)}
        return await self.store.query(name, vector, limit=limit, filter=flt)
