"""A :mod:`sqlite3` connection owned by one worker thread, driven from asyncio.

Every operation (a statement and the fetching of its rows) is one function run on the connection's thread, so the
event loop never blocks on SQLite's locks and a statement costs one thread hop. Operations on one connection run
in submission order.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from gateway_plugins.stores.sql import sqlite_params

T = TypeVar("T")


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


class ThreadedConnection:
    """One SQLite connection and the single thread that uses it."""

    def __init__(self, executor: ThreadPoolExecutor, connection: sqlite3.Connection) -> None:
        self._executor = executor
        self._connection = connection

    @classmethod
    async def open(
        cls, path: Path, *, busy_timeout: float, pragmas: Sequence[str], name: str = "sqlite"
    ) -> ThreadedConnection:
        """Open ``path`` on a new worker thread and run ``pragmas`` (``"foreign_keys = ON"``...) on it."""
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

        def connect() -> sqlite3.Connection:
            connection = sqlite3.connect(
                path,
                timeout=busy_timeout,
                isolation_level=None,  # autocommit: transactions are explicit BEGIN ... COMMIT
                detect_types=sqlite3.PARSE_DECLTYPES,
            )
            try:
                connection.row_factory = _dict_row
                for pragma in pragmas:
                    connection.execute(f"PRAGMA {pragma}").fetchall()
            except BaseException:
                connection.close()
                raise
            return connection

        try:
            connection = await asyncio.get_running_loop().run_in_executor(executor, connect)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(executor, connection)

    async def run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, operation, self._connection)

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None) -> int:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> int:
            cursor = connection.execute(sql, values)
            try:
                return cursor.rowcount
            finally:
                cursor.close()

        return await self.run(operation)

    async def execute_many(self, sql: str, rows: Sequence[Mapping[str, Any]]) -> None:
        values = [sqlite_params(row) for row in rows]
        await self.run(lambda connection: connection.executemany(sql, values).close())

    async def fetch_one(self, sql: str, params: Mapping[str, Any] | None = None) -> dict[str, Any] | None:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> dict[str, Any] | None:
            cursor = connection.execute(sql, values)
            try:
                return cursor.fetchone()
            finally:
                cursor.close()

        return await self.run(operation)

    async def fetch_all(self, sql: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> list[dict[str, Any]]:
            cursor = connection.execute(sql, values)
            try:
                return cursor.fetchall()
            finally:
                cursor.close()

        return await self.run(operation)

    async def close(self) -> None:
        try:
            await self.run(lambda connection: connection.close())
        finally:
            self._executor.shutdown(wait=True)
