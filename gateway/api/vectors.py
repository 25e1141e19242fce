"""Vector-store protocol: collections of points (UUID id, dense vector, JSON payload)."""

from __future__ import annotations

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
