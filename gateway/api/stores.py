"""Relational-store protocol: transactions over portable SQL, with versioned migrations per namespace.

The contract lives here, not in a pack, because more than one consumer needs it: the GIM pack keeps its issues
in it, and the persistent rate limiters and the API-key authenticator keep their tables in it.

SQL uses named parameters (``:name``) with a dict; each backend translates to its driver's style. Migrations
may give one SQL text for every dialect or a mapping ``{"sqlite": ..., "postgres": ...}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

Dialect = Literal["sqlite", "postgres"]
Row = dict[str, Any]
Params = Mapping[str, Any]


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str | Mapping[str, str]

    def for_dialect(self, dialect: str) -> str:
        if isinstance(self.sql, str):
            return self.sql
        return self.sql[dialect]


class StoreIntegrityError(Exception):
    """A unique or foreign-key constraint refused a write (the transaction was rolled back)."""


class Transaction(Protocol):
    async def execute(self, sql: str, params: Params | None = None) -> int:
        """Run one statement; return the affected row count."""

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None: ...

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]: ...


@runtime_checkable
class RelationalStore(Protocol):
    """A transactional SQL store. A transaction that raises leaves nothing behind.

    ``GET /health`` asks each store the deployment opened whether it answers: ``await store.probe()`` when the
    store has such a method (a pooled store whose connections may all be busy answers it outside its pool, so a
    busy store does not read as a down one), else ``SELECT 1``.
    """

    @property
    def dialect(self) -> Dialect: ...

    async def migrate(self, namespace: str, migrations: Sequence[Migration]) -> None:
        """Apply, in order and each in its own transaction, the migrations of ``namespace`` not yet applied."""

    def transaction(self) -> AbstractAsyncContextManager[Transaction]: ...

    async def execute(self, sql: str, params: Params | None = None) -> int: ...

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None: ...

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]: ...

    async def close(self) -> None: ...
