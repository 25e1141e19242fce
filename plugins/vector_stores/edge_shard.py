"""One collection of the ``qdrant-edge`` store: a Qdrant Edge shard in its own directory, and its description.

Everything here is synchronous and may block (the engine is a native library that keeps the GIL while it works);
:mod:`gateway_plugins.vector_stores.edge` calls it from worker threads. Each collection serialises the calls on its
shard with a lock of its own, so closing or deleting a collection never races a query on it.
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe
import structlog

from gateway.api import FilterCondition, ProviderUnavailable, ScoredPoint
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores.common import (
    CheckedPoint,
    DimensionMismatch,
    IndexSettings,
)

log = structlog.get_logger(__name__)

PROVIDER = "vector_store/qdrant-edge"
META_FILE = "collection.json"
SHARD_DIR = "shard"
_FORMAT = 1
_SCROLL_PAGE = 1024

_SCHEMA: Mapping[str, qe.PayloadSchemaType] = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
}


@dataclass(frozen=True)
class EdgeTuning:
    """What the store's config says about one shard (see :class:`QdrantEdgeConfig`)."""

    index: IndexSettings
    indexing_threshold_kb: int | None
    max_segment_size_kb: int | None
    default_segment_number: int | None
    max_search_threads: int | None
    optimize_threshold_kb: int


@dataclass(frozen=True)
class CollectionInfo:
    """What a shard holds and how much of it is indexed (for operators, tests and benchmarks)."""

    name: str
    dimension: int
    points: int
    indexed_vectors: int
    segments: int
    payload_indexes: Mapping[str, str]


def edge_config(dimension: int, tuning: EdgeTuning) -> qe.EdgeConfig:
    """The engine configuration of a shard of ``dimension``-sized cosine vectors."""
    s = tuning.index
    quantization = None
    if s.quantization:
        quantization = qe.ScalarQuantizationConfig(
            type=qe.ScalarType.Int8,
            quantile=s.quantile,
            memory=qe.Memory.Pinned if s.quantized_in_ram else qe.Memory.Cold,
        )
    return qe.EdgeConfig(
        vectors=qe.EdgeVectorParams(
            size=dimension,
            distance=qe.Distance.Cosine,
            memory=qe.Memory.Cold if s.vectors_on_disk else qe.Memory.Cached,
        ),
        hnsw_config=qe.HnswIndexConfig(
            m=s.hnsw_m,
            ef_construct=s.hnsw_ef_construct,
            full_scan_threshold=s.full_scan_threshold_kb,
            memory=qe.Memory.Cold if s.hnsw_on_disk else qe.Memory.Pinned,
        ),
        quantization_config=quantization,
        optimizers=qe.EdgeOptimizersConfig(
            indexing_threshold=tuning.indexing_threshold_kb,
            max_segment_size=tuning.max_segment_size_kb,
            default_segment_number=tuning.default_segment_number,
        ),
        payload_memory=qe.Memory.Cold if s.payload_on_disk else qe.Memory.Cached,
        max_search_threads=tuning.max_search_threads,
    )


def edge_filter(conditions: Sequence[FilterCondition]) -> qe.Filter | None:
    if not conditions:
        return None
    return qe.Filter(must=[_condition(c) for c in conditions])


def _condition(condition: FilterCondition) -> Any:
    key, values = condition.key, condition.values
    if len(values) == 1:
        return _equals(key, values[0])
    if all(isinstance(v, str) for v in values) or all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return qe.FieldCondition(key=key, match=qe.MatchAny(any=list(values)))  # also [] (matches nothing)
    return qe.Filter(should=[_equals(key, v) for v in values])


def _equals(key: str, value: Any) -> qe.FieldCondition:
    if isinstance(value, bool):
        # qdrant-edge-py 0.9 reads a Python bool given to MatchValue as the integer 0/1 (bool subclasses int), so
        # `MatchValue(True)` never matches a boolean payload; numpy's bool_ is not an int and reaches it as a bool.
        return qe.FieldCondition(key=key, match=qe.MatchValue(np.bool_(value)))
    if isinstance(value, float):
        return qe.FieldCondition(key=key, range=qe.RangeFloat(gte=value, lte=value))
    return qe.FieldCondition(key=key, match=qe.MatchValue(value))


class EdgeCollection:
    """An open shard. Every method blocks; callers run them in worker threads."""

    def __init__(self, name: str, directory: Path, shard: qe.EdgeShard, meta: dict[str, Any], tuning: EdgeTuning):
        self.name = name
        self.directory = directory
        self.dimension = int(meta["dimension"])
        self.indexed_fields: dict[str, str] = dict(meta.get("indexed_fields", {}))
        self.lock = threading.Lock()
        self._shard = shard
        self._tuning = tuning
        self._search_params = qe.SearchParams(
            hnsw_ef=tuning.index.hnsw_ef,
            quantization=qe.QuantizationSearchParams(
                rescore=tuning.index.rescore, oversampling=tuning.index.oversampling
            )
            if tuning.index.quantization
            else None,
        )
        self._closed_error: Exception | None = None
        info = shard.info()
        self._unindexed = info.points_count - info.indexed_vectors_count

    # -- life cycle (the caller holds the store's table lock) -----------------------------------------------------

    @classmethod
    def create(
        cls, name: str, directory: Path, dimension: int, indexed_fields: Mapping[str, FieldType], tuning: EdgeTuning
    ) -> EdgeCollection:
        directory.mkdir(parents=True)
        shard = qe.EdgeShard.create(str(directory / SHARD_DIR), edge_config(dimension, tuning))
        meta = {"format": _FORMAT, "name": name, "dimension": dimension, "indexed_fields": {}}
        collection = cls(name, directory, shard, meta, tuning)
        collection.set_indexes(indexed_fields)  # flushes and writes the description: the collection now exists
        return collection

    @classmethod
    def open(cls, directory: Path, tuning: EdgeTuning) -> EdgeCollection:
        meta = read_meta(directory)
        if meta is None:
            raise FileNotFoundError(directory / META_FILE)
        config = edge_config(int(meta["dimension"]), tuning)
        shard = qe.EdgeShard.load(str(directory / SHARD_DIR), config)
        return cls(str(meta["name"]), directory, shard, meta, tuning)

    def close(self, error: Exception) -> None:
        """Flush and close the shard; later calls raise ``error``."""
        with self.lock:
            if self._closed_error is not None:
                return
            self._closed_error = error
            try:
                self._shard.flush()
            finally:
                self._shard.close()

    # -- operations --------------------------------------------------------------------------------------------

    def _check(self) -> qe.EdgeShard:
        if self._closed_error is not None:
            raise self._closed_error
        return self._shard

    @contextmanager
    def _using(self) -> Iterator[qe.EdgeShard]:
        """The shard, under the collection's lock. An error of the engine itself (a damaged file: ``vector 0 is
        not readable``) is the store unavailable, naming the collection and its directory, not an internal error
        of whatever called."""
        with self.lock:
            shard = self._check()
            try:
                yield shard
            except Exception as exc:
                if type(exc) is not Exception and not isinstance(exc, OSError):  # ours, or a caller's mistake
                    raise
                raise ProviderUnavailable(
                    PROVIDER,
                    f"the collection {self.name!r} at {self.directory} cannot be used ({exc}); if its files are "
                    "damaged: stop the gateway, delete that directory, start again, and let the pack that owns it "
                    "re-embed (GIM does at start; the Context Engine with `gateway context index PATH --force`)",
                ) from exc

    def set_indexes(self, fields: Mapping[str, FieldType]) -> None:
        """Create the payload indexes of ``fields`` the shard lacks (or has with another type)."""
        with self.lock:
            shard = self._check()
            changed = False
            for field, kind in fields.items():
                if kind not in _SCHEMA:
                    raise ValueError(f"unknown payload index type {kind!r} for field {field!r}")
                current = self.indexed_fields.get(field)
                if current == kind:
                    continue
                if current is not None:
                    shard.update(qe.UpdateOperation.delete_field_index(field))
                shard.update(qe.UpdateOperation.create_field_index(field, _SCHEMA[kind]))
                self.indexed_fields[field] = kind
                changed = True
            if changed or not (self.directory / META_FILE).exists():
                shard.flush()
                write_meta(self.directory, self.meta())

    def meta(self) -> dict[str, Any]:
        return {
            "format": _FORMAT,
            "name": self.name,
            "dimension": self.dimension,
            "indexed_fields": dict(self.indexed_fields),
        }

    def check_dimension(self, dimension: int) -> None:
        if dimension != self.dimension:
            raise DimensionMismatch(self.name, self.dimension, dimension, what="collection being ensured")

    def upsert(self, points: Sequence[CheckedPoint]) -> None:
        if not points:
            return
        batch = [qe.Point(p.id, p.vector, p.payload) for p in points]
        with self._using() as shard:
            try:
                shard.update(qe.UpdateOperation.upsert_points(batch))
            except TypeError as exc:  # a payload value the engine cannot store (a number beyond 64 bits...)
                raise ValueError(f"a payload for collection {self.name!r} cannot be stored: {exc}") from exc
            self._unindexed += len(batch)
            threshold = self._tuning.optimize_threshold_kb
            if threshold and self._unindexed * self.dimension * 4 >= threshold * 1024:
                self._optimize(shard)

    def delete(self, ids: Sequence[str]) -> None:
        if not ids:
            return
        with self._using() as shard:
            shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def query(
        self,
        vector: list[float],
        *,
        limit: int,
        offset: int,
        score_threshold: float | None,
        conditions: Sequence[FilterCondition],
    ) -> list[ScoredPoint]:
        request = qe.QueryRequest(
            limit=limit,
            offset=offset,
            query=qe.Query.Nearest(vector),
            filter=edge_filter(conditions),
            score_threshold=score_threshold,
            params=self._search_params,
            with_payload=True,
            with_vector=False,
        )
        with self._using() as shard:
            found = shard.query(request)
        return [ScoredPoint(id=str(p.id), score=float(p.score), payload=p.payload or {}) for p in found]

    def count(self, conditions: Sequence[FilterCondition]) -> int:
        with self._using() as shard:
            return int(shard.count(qe.CountRequest(exact=True, filter=edge_filter(conditions))))

    def list_ids(self, conditions: Sequence[FilterCondition]) -> list[str]:
        ids: list[str] = []
        offset: Any = None
        filter = edge_filter(conditions)
        while True:
            request = qe.ScrollRequest(
                offset=offset, limit=_SCROLL_PAGE, filter=filter, with_payload=False, with_vector=False
            )
            with self._using() as shard:
                records, offset = shard.scroll(request)
            ids.extend(str(r.id) for r in records)
            if offset is None:
                return ids

    def flush(self) -> None:
        with self.lock:
            if self._closed_error is None:
                self._shard.flush()

    def optimize(self) -> bool:
        """Run the engine's optimizers (HNSW and quantization of what is not indexed yet, merges, vacuum)."""
        with self._using() as shard:
            return self._optimize(shard)

    def _optimize(self, shard: qe.EdgeShard) -> bool:
        info = shard.info()
        log.info(
            "building the vector index",
            collection=self.name,
            points=info.points_count,
            not_indexed=info.points_count - info.indexed_vectors_count,
        )
        changed = bool(shard.optimize())
        info = shard.info()
        self._unindexed = info.points_count - info.indexed_vectors_count
        return changed

    def info(self) -> CollectionInfo:
        with self._using() as shard:
            info = shard.info()
        return CollectionInfo(
            name=self.name,
            dimension=self.dimension,
            points=info.points_count,
            indexed_vectors=info.indexed_vectors_count,
            segments=info.segments_count,
            payload_indexes=dict(self.indexed_fields),
        )


# -- the description file -----------------------------------------------------------------------------------------


def read_meta(directory: Path) -> dict[str, Any] | None:
    """The collection description in ``directory``, or ``None`` when it has none (a creation that never ended)."""
    try:
        meta = json.loads((directory / META_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    if meta.get("format") != _FORMAT:
        raise RuntimeError(f"{directory / META_FILE} has format {meta.get('format')!r}; this version reads {_FORMAT}")
    return dict(meta)


def write_meta(directory: Path, meta: Mapping[str, Any]) -> None:
    """Write the description atomically (a reader sees the old file or the new one, never half of one)."""
    tmp = directory / f".{META_FILE}.{uuid.uuid4().hex}"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, directory / META_FILE)
