"""A vector store: exact (brute-force) cosine search over collections held in memory. Nothing survives a restart,
so it suits tests and small, throwaway deployments."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from gateway.api import FieldType, Filter, ScoredPoint, VectorPoint


def _point_id(value: str) -> str:
    try:
        return str(uuid.UUID(value))  # any spelling of a UUID, returned in canonical form
    except (ValueError, AttributeError, TypeError):
        raise ValueError(f"point ids are UUIDs, got {value!r}") from None


def _unit(vector: Sequence[float], dimension: int) -> list[float]:
    if len(vector) != dimension:
        raise ValueError(f"expected a vector of {dimension} dimensions, got {len(vector)}")
    if not all(math.isfinite(value) for value in vector):
        raise ValueError("vectors must hold finite numbers")
    norm = math.sqrt(sum(value * value for value in vector)) or 1.0
    return [value / norm for value in vector]


def _json_copy(payload: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return json.loads(json.dumps(payload, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"payloads must be JSON: {exc}") from None


def _lookup(payload: Mapping[str, Any], key: str) -> Any:
    value: Any = payload
    for part in key.split("."):  # "doc.title" reaches into nested objects
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _equal(stored: Any, wanted: Any) -> bool:
    if isinstance(stored, bool) or isinstance(wanted, bool):  # True is not 1
        return isinstance(stored, bool) and isinstance(wanted, bool) and stored == wanted
    if isinstance(wanted, float):
        return isinstance(stored, int | float) and float(stored) == wanted
    return type(stored) is type(wanted) and stored == wanted


def _check_filter(filter: Filter | None) -> None:
    for key, wanted in (filter or {}).items():
        for value in wanted if isinstance(wanted, list) else [wanted]:
            if not isinstance(value, str | int | float) or (isinstance(value, float) and not math.isfinite(value)):
                raise ValueError(f"filter {key!r}: {value!r} is not a string, number or boolean")


def _matches(payload: Mapping[str, Any], filter: Filter | None) -> bool:
    """Every field matches; a list in the filter matches any of its values, a list in the payload any element."""
    for key, wanted in (filter or {}).items():
        stored = _lookup(payload, key)
        candidates = stored if isinstance(stored, list) else [stored]
        options = wanted if isinstance(wanted, list) else [wanted]
        if not any(_equal(candidate, option) for candidate in candidates for option in options):
            return False
    return True


class MemoryVectorStore:
    """Collections of ``{id: (unit vector, payload)}``. No ``await`` inside a method: each runs atomically."""

    def __init__(self) -> None:
        self._collections: dict[str, tuple[int, dict[str, tuple[list[float], dict[str, Any]]]]] = {}

    def _collection(self, name: str) -> tuple[int, dict[str, tuple[list[float], dict[str, Any]]]]:
        if name not in self._collections:
            raise LookupError(f"no collection {name!r}")
        return self._collections[name]

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        if dimension < 1:
            raise ValueError(f"a collection needs at least one dimension, got {dimension}")
        existing = self._collections.setdefault(name, (dimension, {}))
        if existing[0] != dimension:
            raise ValueError(f"collection {name!r} has {existing[0]} dimensions, not {dimension}")

    async def list_collections(self) -> list[str]:
        return sorted(self._collections)

    async def delete_collection(self, name: str) -> None:
        self._collections.pop(name, None)

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None:
        dimension, stored = self._collection(name)
        checked = [(_point_id(p.id), _unit(p.vector, dimension), _json_copy(p.payload)) for p in points]
        for point_id, vector, payload in checked:  # all checked first: a bad point refuses the whole batch
            stored[point_id] = (vector, payload)

    async def delete(self, name: str, ids: Sequence[str]) -> None:
        _, stored = self._collection(name)
        for point_id in [_point_id(i) for i in ids]:
            stored.pop(point_id, None)

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
        dimension, stored = self._collection(name)
        if limit < 0 or offset < 0:
            raise ValueError("limit and offset must not be negative")
        _check_filter(filter)
        probe = _unit(vector, dimension)
        scored = [
            ScoredPoint(point_id, sum(a * b for a, b in zip(probe, unit, strict=True)), payload)
            for point_id, (unit, payload) in stored.items()
            if _matches(payload, filter)
        ]
        if score_threshold is not None:
            scored = [point for point in scored if point.score >= score_threshold]
        scored.sort(key=lambda point: point.score, reverse=True)
        return scored[offset : offset + limit]

    async def count(self, name: str, *, filter: Filter | None = None) -> int:
        return len(await self.list_ids(name, filter=filter))

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]:
        _, stored = self._collection(name)
        _check_filter(filter)
        return [point_id for point_id, (_, payload) in stored.items() if _matches(payload, filter)]

    async def flush(self) -> None:
        pass  # nothing to write

    async def close(self) -> None:
        pass
