"""Vector-store protocol: collections of points (UUID id, dense vector, JSON payload), and the checks every store
makes on what callers pass (so that a store written elsewhere refuses the same input the built-in ones do)."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FieldType = Literal["keyword", "integer", "float", "bool", "datetime"]

Filter = Mapping[str, Any]
"""Payload filter: ``{field: value}`` matches equality, ``{field: [v1, v2]}`` matches any of the values; all
fields must match."""


@dataclass(frozen=True)
class VectorPoint:
    id: str
    """A UUID string (the form every Qdrant deployment accepts)."""
    vector: Sequence[float]
    payload: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredPoint:
    id: str
    score: float
    """Cosine similarity, higher is closer."""
    payload: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class VectorStore(Protocol):
    """A cosine-similarity vector store. One collection holds vectors of exactly one embedder id."""

    async def ensure_collection(
        self, name: str, *, dimension: int, indexed_fields: Mapping[str, FieldType] | None = None
    ) -> None:
        """Create the collection if missing; raise if it exists with another dimension."""

    async def list_collections(self) -> list[str]: ...

    async def delete_collection(self, name: str) -> None: ...

    async def upsert(self, name: str, points: Sequence[VectorPoint]) -> None: ...

    async def delete(self, name: str, ids: Sequence[str]) -> None: ...

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
        """Closest points first; ties keep no particular order."""

    async def count(self, name: str, *, filter: Filter | None = None) -> int: ...

    async def list_ids(self, name: str, *, filter: Filter | None = None) -> list[str]: ...

    async def flush(self) -> None: ...

    async def close(self) -> None: ...


# -- checks on what callers pass (every error a :class:`ValueError`) ---------------------------------------------


def canonical_point_id(point_id: str) -> str:
    """The canonical form (lower-case, hyphenated) of a UUID string; :class:`ValueError` for anything else."""
    if not isinstance(point_id, str):
        raise ValueError(f"a point id is a UUID string, not {type(point_id).__name__}")
    try:
        return str(uuid.UUID(point_id))
    except ValueError:
        raise ValueError(f"a point id is a UUID string, got {point_id!r}") from None


def check_limit_and_offset(limit: int, offset: int) -> None:
    """:class:`ValueError` if the ``limit`` or ``offset`` of a query is negative."""
    if limit < 0 or offset < 0:
        raise ValueError(f"limit and offset must not be negative (limit={limit}, offset={offset})")


FilterValue = str | int | float | bool


@dataclass(frozen=True)
class FilterCondition:
    """One field of a payload filter: the field must equal one of ``values`` (one value: plain equality)."""

    key: str
    values: tuple[FilterValue, ...]


def filter_conditions(filter: Filter | None) -> list[FilterCondition]:
    """The payload filter as conditions, all of which must hold; :class:`ValueError` for unsupported values."""
    if not filter:
        return []
    out = []
    for key, value in filter.items():
        if not isinstance(key, str) or not key:
            raise ValueError(f"a filter field is a non-empty string, got {key!r}")
        values = tuple(value) if isinstance(value, list | tuple | set | frozenset) else (value,)
        for item in values:
            if not isinstance(item, str | int | float | bool) or (isinstance(item, float) and not math.isfinite(item)):
                raise ValueError(f"filter field {key!r}: values are strings, numbers or booleans, got {item!r}")
        out.append(FilterCondition(key, values))
    return out


def checked_payload(point_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    """``payload`` as a dict, if it is a mapping JSON can hold (no NaN, no sets, no objects)."""
    if not isinstance(payload, Mapping):
        raise ValueError(f"the payload of point {point_id} is not a mapping")
    try:
        json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the payload of point {point_id} is not JSON: {exc}") from None
    return dict(payload)
