"""The ``qdrant-edge`` store's operations, blocking: the directory lock, the table of open collections, and every
call of the vector-store protocol as a plain method.

Two callers run them: :class:`gateway_plugins.vector_stores.edge.QdrantEdgeStore` (the async store of this process)
and :class:`gateway_plugins.vector_stores.edge_server.EdgeStoreServer` (other processes' requests). Every method is
thread-safe: the table has a lock, and each collection serialises the calls on its shard.

:meth:`SyncEdgeStore.runs_short` says which calls are quick enough to run on an event loop's thread: Qdrant Edge
0.9 keeps the GIL while it searches or writes, so a worker thread frees nothing for the loop and only adds its hop
(measured at 100k points: a query ~0.3-0.5 ms faster inline; an upsert of two points 0.3 ms inline against
1.0-1.2 ms hopping). Opening a collection reads the disk and bulk writes take long: those go to worker threads.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

import structlog

from gateway.api import Filter, ScoredPoint, VectorPoint, canonical_point_id, check_limit_and_offset, filter_conditions
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores.common import CollectionNotFound, StoreClosed, checked_points, checked_vector
from gateway_plugins.vector_stores.edge_shard import CollectionInfo, EdgeCollection, EdgeTuning, read_meta
from gateway_plugins.vector_stores.locking import DirectoryLock

log = structlog.get_logger(__name__)

COLLECTIONS = "collections"
_TRASH_PREFIX = ".trash-"
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-.")
_RESERVED = frozenset({"con", "prn", "aux", "nul"} | {f"{p}{i}" for p in ("com", "lpt") for i in range(10)})

INLINE_POINTS = 16
"""Upserts of at most this many points into an open collection count as short (see ``runs_short``)."""


def directory_name(name: str) -> str:
    """The directory of collection ``name``: the name itself when that is safe everywhere, else a hash of it."""
    if not isinstance(name, str) or not name:
        raise ValueError("a collection name is a non-empty string")
    plain = (
        len(name) <= 100
        and all(c in _SAFE for c in name)
        and not name.startswith((".", "x--"))
        and name.split(".")[0] not in _RESERVED
    )
    return name if plain else "x--" + hashlib.sha256(name.encode("utf-8")).hexdigest()


class SyncEdgeStore:
    """Qdrant Edge shards under ``directory`` (one per collection), locked for this process while open.

    Creating it takes the directory lock (:class:`~gateway_plugins.vector_stores.locking.DirectoryInUse` when
    another process holds it). Collections open on first use and stay open until :meth:`close`.
    """

    def __init__(self, directory: Path, tuning: EdgeTuning, provider: str) -> None:
        self.directory = Path(directory)
        self._tuning = tuning
        self._root = self.directory / COLLECTIONS
        self._lock = DirectoryLock(self.directory, provider)
        self._lock.acquire()
        self._table_lock = threading.Lock()
        self._open: dict[str, EdgeCollection] = {}
        self._closed = False
        try:
            self._root.mkdir(exist_ok=True)
            for leftover in self._root.glob(_TRASH_PREFIX + "*"):  # a delete_collection that was interrupted
                shutil.rmtree(leftover, ignore_errors=True)
        except BaseException:
            self._lock.release()
            raise
        log.debug("qdrant-edge store opened", path=str(self.directory))

    def runs_short(self, name: str, points: int = 0) -> bool:
        """True when a query (``points == 0``) or an upsert of ``points`` into ``name`` may run on a loop's thread."""
        return name in self._open and points <= INLINE_POINTS

    def collection(self, name: str) -> EdgeCollection:
        """The open collection ``name``, opened from disk on first use."""
        with self._table_lock:
            if self._closed:
                raise StoreClosed("the qdrant-edge store is closed")
            collection = self._open.get(name)
            if collection is None:
                directory = self._root / directory_name(name)
                if read_meta(directory) is None:
                    raise CollectionNotFound(name)
                collection = EdgeCollection.open(directory, self._tuning)
                self._open[name] = collection
            return collection

    # -- collections -------------------------------------------------------------------------------------------

    def ensure_collection(self, name: str, dimension: int, indexed_fields: Mapping[str, FieldType] | None) -> None:
        if not isinstance(dimension, int) or isinstance(dimension, bool) or dimension < 1:
            raise ValueError(f"a collection's dimension is a positive integer, got {dimension!r}")
        fields = dict(indexed_fields or {})
        try:
            collection = self.collection(name)
        except CollectionNotFound:
            with self._table_lock:
                if self._closed:
                    raise StoreClosed("the qdrant-edge store is closed") from None
                collection = self._open.get(name)
                if collection is None:
                    directory = self._root / directory_name(name)
                    if directory.exists():  # a creation that never finished: no description, no data
                        shutil.rmtree(directory)
                    collection = EdgeCollection.create(name, directory, dimension, fields, self._tuning)
                    self._open[name] = collection
                    log.info("vector collection created", collection=name, dimension=dimension)
                    return
        collection.check_dimension(dimension)
        collection.set_indexes(fields)

    def list_collections(self) -> list[str]:
        with self._table_lock:
            if self._closed:
                raise StoreClosed("the qdrant-edge store is closed")
            names = []
            for directory in sorted(self._root.iterdir()):
                if directory.name.startswith(".") or not directory.is_dir():
                    continue
                meta = read_meta(directory)
                if meta is not None:
                    names.append(str(meta["name"]))
            return sorted(names)

    def delete_collection(self, name: str) -> None:
        with self._table_lock:
            if self._closed:
                raise StoreClosed("the qdrant-edge store is closed")
            directory = self._root / directory_name(name)
            collection = self._open.pop(name, None)
            if collection is not None:
                collection.close(CollectionNotFound(name))
            if not directory.exists():
                return
            # Out of the listing in one step, then removed (an interrupted removal is finished at the next start).
            trash = self._root / f"{_TRASH_PREFIX}{uuid.uuid4().hex}"
            directory.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)  # outside the lock: a query on the loop may be waiting for it
        log.info("vector collection deleted", collection=name)

    # -- points ------------------------------------------------------------------------------------------------

    def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        collection = self.collection(name)
        collection.upsert(checked_points(name, points, collection.dimension))

    def delete(self, name: str, ids: Sequence[str]) -> None:
        canonical = [canonical_point_id(i) for i in ids]
        self.collection(name).delete(canonical)

    def query(
        self,
        name: str,
        vector: Sequence[float],
        limit: int = 10,
        offset: int = 0,
        score_threshold: float | None = None,
        filter: Filter | None = None,
    ) -> list[ScoredPoint]:
        check_limit_and_offset(limit, offset)
        conds = filter_conditions(filter)
        collection = self.collection(name)
        checked = checked_vector(name, vector, collection.dimension)
        if limit == 0:
            return []
        return collection.query(checked, limit=limit, offset=offset, score_threshold=score_threshold, conditions=conds)

    def count(self, name: str, filter: Filter | None = None) -> int:
        conds = filter_conditions(filter)
        return self.collection(name).count(conds)

    def list_ids(self, name: str, filter: Filter | None = None) -> list[str]:
        conds = filter_conditions(filter)
        return self.collection(name).list_ids(conds)

    # -- maintenance -------------------------------------------------------------------------------------------

    def optimize(self, name: str | None = None) -> bool:
        if name is not None:
            return self.collection(name).optimize()
        with self._table_lock:
            collections = list(self._open.values())
        return any([c.optimize() for c in collections])

    def info(self, name: str) -> CollectionInfo:
        return self.collection(name).info()

    def flush(self) -> None:
        with self._table_lock:
            collections = list(self._open.values())
        for collection in collections:
            collection.flush()

    def close(self) -> None:
        """Flush and close every shard and release the directory lock. Idempotent."""
        with self._table_lock:
            if self._closed:
                return
            self._closed = True
            collections = list(self._open.values())
            self._open.clear()
        try:
            for collection in collections:
                try:
                    collection.close(StoreClosed("the qdrant-edge store is closed"))
                except Exception:
                    log.exception("closing a vector collection failed", collection=collection.name)
        finally:
            self._lock.release()
            log.debug("qdrant-edge store closed", path=str(self.directory))
