"""The ``qdrant-edge`` vector store: Qdrant's engine in-process (``qdrant-edge-py``), the embedded default.

Layout under the provider's data dir::

    store.pid, store.pid.lock      the process lock (see :mod:`gateway_plugins.vector_stores.locking`)
    run/store.sock                 where the lock's holder serves the store to other processes of the same user
                                   (see :mod:`gateway_plugins.vector_stores.edge_shared`)
    collections/<dir>/collection.json   the collection's name, dimension and payload indexes
    collections/<dir>/shard/            the Qdrant Edge shard (WAL, segments)

``<dir>`` is the collection name when it is a safe, lower-case file name (``gim__local-all-minilm-l6-v2-384``),
otherwise ``x--`` and a SHA-256 of the name; the real name is in ``collection.json``.

Indexing: a Qdrant Edge shard searches new points by brute force until its optimizers run, which happens only
when asked (``EdgeShard.optimize``), synchronously, holding the GIL for the whole build (qdrant-edge-py 0.9).
The store asks after an upsert once ``optimize_threshold_kb`` of vectors are not indexed yet, so queries never
scan more than that, and :meth:`QdrantEdgeStore.optimize` builds the index on demand (after a bulk load).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import anyio
import structlog
from pydantic import Field

from gateway.api import Filter, ScoredPoint, VectorPoint, canonical_point_id, check_limit_and_offset, filter_conditions
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores.common import IndexSettings
from gateway_plugins.vector_stores.edge_shard import PROVIDER, CollectionInfo, EdgeTuning
from gateway_plugins.vector_stores.edge_sync import SyncEdgeStore, directory_name

__all__ = ["PROVIDER", "QdrantEdgeConfig", "QdrantEdgeStore", "directory_name"]

log = structlog.get_logger(__name__)

T = TypeVar("T")


class QdrantEdgeConfig(IndexSettings):
    """``[plugins.vector_store.qdrant-edge]``: index settings plus Qdrant Edge's optimizer knobs."""

    optimize_threshold_kb: int = Field(
        20_000,
        ge=0,
        description="Build the index after an upsert once this many KB of vectors are not indexed yet "
        "(0: only when optimize() is called). Queries scan at most this much by brute force.",
    )
    indexing_threshold_kb: int | None = Field(
        None, ge=0, description="Segments larger than this get an HNSW index (None: the engine's default)."
    )
    max_segment_size_kb: int | None = Field(None, ge=1, description="Largest segment (None: the engine's default).")
    default_segment_number: int | None = Field(
        None, ge=0, description="Segments the optimizer aims for (None or 0: chosen from the CPU count)."
    )
    max_search_threads: int | None = Field(
        None, ge=1, description="Threads of a shard's search pool (None: one per CPU)."
    )

    share: bool = Field(
        True,
        description="Serve the store to other gateway processes of the same user on this data dir (a second "
        "assistant, a CLI command) over a private local socket; false: a second process fails at start.",
    )
    takeover_timeout_seconds: float = Field(
        15.0,
        gt=0,
        description="How long a process waits for the store's owner to answer on its socket, or for a dead owner's "
        "lock to pass to it, before its call fails (service_unavailable).",
    )
    request_timeout_seconds: float = Field(
        120.0,
        gt=0,
        description="How long a call served by another process may take (an index build there holds it up).",
    )

    def tuning(self) -> EdgeTuning:
        return EdgeTuning(
            index=self,
            indexing_threshold_kb=self.indexing_threshold_kb,
            max_segment_size_kb=self.max_segment_size_kb,
            default_segment_number=self.default_segment_number,
            max_search_threads=self.max_search_threads,
            optimize_threshold_kb=self.optimize_threshold_kb,
        )


class QdrantEdgeStore:
    """:class:`gateway.api.VectorStore` on Qdrant Edge shards under ``directory`` (one shard per collection).

    Creating the store locks ``directory`` for this process (:class:`gateway.api.ProviderUnavailable` when
    another process holds it). Collections open on first use and stay open until :meth:`close`. The work is done
    by :class:`~gateway_plugins.vector_stores.edge_sync.SyncEdgeStore` (``self.sync``): short calls on the
    caller's thread, the rest in worker threads.
    """

    def __init__(self, directory: Path, config: QdrantEdgeConfig | None = None, *, provider: str = PROVIDER):
        self.directory = Path(directory)
        self.config = config or QdrantEdgeConfig()
        self.sync = SyncEdgeStore(self.directory, self.config.tuning(), provider)

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(functools.partial(fn, *args))

    # -- collections -------------------------------------------------------------------------------------------

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        """Create the collection if missing; :class:`ValueError` if it exists with another dimension."""
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise ValueError(f"a collection's dimension is a positive integer, got {dimension!r}")
        await self._run(self.sync.ensure_collection, name, dimension, indexed_fields)

    async def list_collections(self) -> list[str]:
        return await self._run(self.sync.list_collections)

    async def delete_collection(self, name: str) -> None:
        await self._run(self.sync.delete_collection, name)

    # -- points ------------------------------------------------------------------------------------------------

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        if self.sync.runs_short(name, len(points)):
            return self.sync.upsert(name, points)
        await self._run(self.sync.upsert, name, points)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        canonical = [canonical_point_id(i) for i in ids]
        await self._run(self.sync.delete, name, canonical)

    async def query(
        self,
        name: str,
        vector: Sequence[float],
        *,
        limit: int = 10,
        offset: int = 0,
        score_threshold: float | None = None,
        filter: Filter | None = None,
    ) -> list[ScoredPoint]:
        """Closest points first (cosine similarity, re-scored with the original vectors)."""
        check_limit_and_offset(limit, offset)
        filter_conditions(filter)  # refused here, before any hop
        if self.sync.runs_short(name):
            return self.sync.query(name, vector, limit, offset, score_threshold, filter)
        return await self._run(self.sync.query, name, vector, limit, offset, score_threshold, filter)

    async def count(self, name: str, *, filter: Filter | None = None) -> int:
        filter_conditions(filter)
        return await self._run(self.sync.count, name, filter)

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]:
        filter_conditions(filter)
        return await self._run(self.sync.list_ids, name, filter)

    # -- maintenance -------------------------------------------------------------------------------------------

    async def optimize(self, name: str | None = None) -> bool:
        """Build the index of ``name`` (every open collection when ``None``) now. True if anything changed.

        Blocks the process for the duration of the build (the engine holds the GIL): call it after bulk loads
        or at quiet moments, not on a request path.
        """
        return await self._run(self.sync.optimize, name)

    async def info(self, name: str) -> CollectionInfo:
        """Point, indexed-vector and segment counts of collection ``name``."""
        return await self._run(self.sync.info, name)

    async def flush(self) -> None:
        await self._run(self.sync.flush)

    async def close(self) -> None:
        """Flush and close every shard and release the directory lock. Idempotent."""
        await self._run(self.sync.close)
