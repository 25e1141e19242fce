"""Where the pack's vectors live: one collection per embedder id and generation.

``gim__<embedder id, sanitised>`` holds generation 0 of an embedder's vectors; a full reindex builds generation
``n`` in ``gim__<id>__g<n>`` and switches over when complete (:mod:`gateway_plugins.gim.reindex`). A query is only
ever compared with the collection of the embedder that embedded it.

Each item (master or child) has one point per vector *kind* (``error`` and ``resolution`` for the hybrid strategy,
``combined`` for the baseline), with a deterministic UUID (:func:`point_id`), so re-writing an item is idempotent
and deleting one needs no lookup. Payload: ``item_id``, ``master_id``, ``kind`` (indexed).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from gateway.api import ConfigError, Filter, RelationalStore, ScoredPoint, VectorPoint, VectorStore
from gateway_plugins.gim.repository import Repository

log = structlog.get_logger(__name__)

__all__ = ["Generation", "ItemVectors", "VectorIndex", "collection_name", "point_id"]

PREFIX = "gim__"
_NAMESPACE = uuid.UUID("6f0d6c1e-5b7a-4c1e-9a51-2f1f3c0b9d42")
INDEXED_FIELDS: Mapping[str, str] = {"kind": "keyword", "master_id": "keyword", "item_id": "keyword"}


def collection_name(embedder_id: str, generation: int = 0) -> str:
    """``gim__local-all-minilm-l6-v2-384`` for generation 0, ``...__g2`` for generation 2."""
    base = PREFIX + re.sub(r"[^a-z0-9]+", "-", embedder_id.lower()).strip("-")
    return base if generation == 0 else f"{base}__g{generation}"


def point_id(item_id: str, kind: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{item_id}/{kind}"))


@dataclass(frozen=True)
class Generation:
    embedder_id: str
    active: int
    building: int | None
    dimension: int

    def targets(self) -> tuple[int, ...]:
        """Generations a new vector must be written to (the building one too, so a reindex misses nothing)."""
        return (self.active,) if self.building is None else (self.active, self.building)


@dataclass(frozen=True)
class ItemVectors:
    """One item's vectors from one embedder, by kind."""

    item_id: str
    master_id: str
    vectors: Mapping[str, Sequence[float]]


class VectorIndex:
    """The pack's view of the vector store: generations, writes to every target, and kind-filtered queries."""

    def __init__(self, store: VectorStore, db: RelationalStore, repo: Repository) -> None:
        self.store = store
        self._db = db
        self._repo = repo
        self._generations: dict[str, Generation] = {}

    @property
    def generations(self) -> Mapping[str, Generation]:
        return self._generations

    async def refresh(self) -> None:
        """Reload the generations from the relational store (another process may have switched one)."""
        rows = await self._repo.generations(self._db)
        self._generations = {
            eid: Generation(eid, int(r["active_generation"]), r["building_generation"], int(r["dimension"]))
            for eid, r in rows.items()
        }

    async def ensure_embedder(self, embedder_id: str, dimension: int) -> Generation:
        """Register an embedder and create its active (and building) collections if missing."""
        if embedder_id not in self._generations:
            name = collection_name(embedder_id)
            if owner := next((e for e in self._generations if collection_name(e) == name), None):
                raise ConfigError(
                    f"embedder {embedder_id!r} would write to the vector collection {name!r}, which holds the vectors "
                    f"of embedder {owner!r} (their ids differ only in case or punctuation): give one another id"
                )
            await self._repo.ensure_generation(self._db, embedder_id, dimension)
            await self.refresh()
        generation = self._generations[embedder_id]
        for number in generation.targets():
            await self.store.ensure_collection(
                collection_name(embedder_id, number), dimension=generation.dimension, indexed_fields=INDEXED_FIELDS
            )
        return generation

    def generation(self, embedder_id: str) -> Generation | None:
        return self._generations.get(embedder_id)

    async def write(self, embedder_id: str, items: Sequence[ItemVectors], *, generations: Sequence[int]) -> None:
        points = [
            VectorPoint(
                id=point_id(item.item_id, kind),
                vector=vector,
                payload={"item_id": item.item_id, "master_id": item.master_id, "kind": kind},
            )
            for item in items
            for kind, vector in item.vectors.items()
        ]
        for number in generations:
            await self.store.upsert(collection_name(embedder_id, number), points)

    async def query(
        self,
        embedder_id: str,
        vector: Sequence[float],
        *,
        kind: str,
        limit: int,
        master_ids: Sequence[str] | None = None,
    ) -> list[ScoredPoint]:
        """Closest items of ``kind`` in the embedder's active collection (optionally within some masters)."""
        generation = self._generations.get(embedder_id)
        if generation is None or limit <= 0:
            return []
        flt: dict[str, object] = {"kind": kind}
        if master_ids is not None:
            if not master_ids:
                return []
            flt["master_id"] = list(master_ids)
        filter_: Filter = flt
        name = collection_name(embedder_id, generation.active)
        try:
            return await self.store.query(name, vector, limit=limit, filter=filter_)
        except LookupError:
            # another process switched generations (and dropped the old collection): follow it once
            await self.refresh()
            generation = self._generations.get(embedder_id)
            if generation is None or collection_name(embedder_id, generation.active) == name:
                raise
            return await self.store.query(
                collection_name(embedder_id, generation.active), vector, limit=limit, filter=filter_
            )

    async def delete_items(self, item_ids: Sequence[str], kinds: Sequence[str]) -> None:
        """Remove the items' points from every collection of the pack (any embedder, any generation)."""
        if not item_ids:
            return
        ids = [point_id(item, kind) for item in item_ids for kind in kinds]
        for name in await self.store.list_collections():
            if name.startswith(PREFIX):
                await self.store.delete(name, ids)
