"""A relational store that wraps another one and logs the statements slower than a threshold.

A wrapper is the small way into this protocol: everything SQL (dialects, transactions, migrations) stays with the
wrapped store, which the factory gets by name through ``context.provider``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

from gateway.api import Migration, RelationalStore, Transaction

log = logging.getLogger(__name__)
T = TypeVar("T")


class _Timer:
    def __init__(self, slow_ms: float) -> None:
        self.slow_ms = slow_ms

    async def timed(self, sql: str, call: Awaitable[T]) -> T:
        started = time.perf_counter()
        try:
            return await call
        finally:
            elapsed_ms = (time.perf_counter() - started) * 1000
            if elapsed_ms >= self.slow_ms:
                log.warning("slow statement (%.1f ms): %s", elapsed_ms, " ".join(sql.split())[:200])


class _TimedTransaction:
    def __init__(self, inner: Transaction, timer: _Timer) -> None:
        self._inner, self._timer = inner, timer

    async def execute(self, sql: str, params: Any = None) -> int:
        return await self._timer.timed(sql, self._inner.execute(sql, params))

    async def execute_many(self, sql: str, rows: Sequence[Any]) -> None:
        await self._timer.timed(sql, self._inner.execute_many(sql, rows))

    async def fetch_one(self, sql: str, params: Any = None) -> dict[str, Any] | None:
        return await self._timer.timed(sql, self._inner.fetch_one(sql, params))

    async def fetch_all(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        return await self._timer.timed(sql, self._inner.fetch_all(sql, params))


class TimedStore:
    """``inner`` with every statement timed; parameters are never logged (they may hold personal data)."""

    def __init__(self, inner: RelationalStore, slow_ms: float = 100.0) -> None:
        self._inner = inner
        self._timer = _Timer(slow_ms)

    @property
    def dialect(self) -> Any:
        return self._inner.dialect

    async def migrate(self, namespace: str, migrations: Sequence[Migration]) -> None:
        await self._inner.migrate(namespace, migrations)

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        return self._transaction()

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Transaction]:
        async with self._inner.transaction() as inner:
            yield _TimedTransaction(inner, self._timer)

    async def execute(self, sql: str, params: Any = None) -> int:
        return await self._timer.timed(sql, self._inner.execute(sql, params))

    async def fetch_one(self, sql: str, params: Any = None) -> dict[str, Any] | None:
        return await self._timer.timed(sql, self._inner.fetch_one(sql, params))

    async def fetch_all(self, sql: str, params: Any = None) -> list[dict[str, Any]]:
        return await self._timer.timed(sql, self._inner.fetch_all(sql, params))

    async def close(self) -> None:
        await self._inner.close()  # the gateway closes the wrapped store too: the built-in stores allow a second close
