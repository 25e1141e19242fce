"""A :mod:`sqlite3` connection owned by one worker thread, driven from asyncio.

An operation (a statement and the fetching of its rows) is a function of the connection. It runs either on the
connection's worker thread (one thread hop, so the event loop never waits on SQLite's locks or on a disk sync)
or, for a connection opened ``inline``, on the caller's thread when it cannot wait (:meth:`call`). Operations on
one connection run in submission order and never at the same time.

Why inline at all: a hop costs two context switches, measured at ~170 µs of CPU on the project's 2-core machine,
where a point statement inside a transaction costs ~10 µs. A three-statement transaction took 530 µs hopping and
21 µs inline. A statement cannot wait once its transaction holds SQLite's write lock (``BEGIN IMMEDIATE``), and a
statement that needs a lock another process holds fails at once with ``SQLITE_BUSY`` on an inline connection (its
busy timeout is 0), so :meth:`call` retries it on the worker thread, which waits with the configured timeout.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import tenacity

from gateway.api import ProviderUnavailable
from gateway_plugins.stores.sql import sqlite_params

T = TypeVar("T")


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {column[0]: value for column, value in zip(cursor.description, row, strict=True)}


def _is_busy(exc: BaseException) -> bool:
    """``SQLITE_BUSY``/``SQLITE_LOCKED`` or one of their extended codes (``SQLITE_BUSY_SNAPSHOT``: a statement
    that read before another process committed cannot write; ``SQLITE_BUSY_RECOVERY``: another process is
    recovering the WAL). Python reports the extended code; its low byte is the primary one."""
    if not isinstance(exc, sqlite3.OperationalError) or exc.sqlite_errorcode is None:
        return False
    return exc.sqlite_errorcode & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


_FILE_PROBLEMS = {
    sqlite3.SQLITE_FULL: "the disk is full",
    sqlite3.SQLITE_IOERR: "the disk failed to read or write it",
    sqlite3.SQLITE_READONLY: "it cannot be written (a read-only file or file system)",
    sqlite3.SQLITE_CANTOPEN: "it cannot be opened (missing directory, or no permission)",
}
"""What the operator must fix on the machine: a retryable outage naming the file, not an internal error."""


@contextmanager
def unusable_is_unavailable(provider: str, path: Path, seconds: float) -> Iterator[None]:
    """A database still locked by another process after the busy timeout is :class:`ProviderUnavailable` (a
    caller answers ``service_unavailable``, retryable), not a raw ``sqlite3.OperationalError``; so is a file that
    is not an SQLite database, or a damaged one, and a full disk, an I/O error or a file that cannot be written or
    opened, each naming the file."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        code = (exc.sqlite_errorcode or 0) & 0xFF
        if code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT):
            raise ProviderUnavailable(provider, f"{path} is not an SQLite database, or it is damaged ({exc})") from exc
        if (why := _FILE_PROBLEMS.get(code)) is not None:
            raise ProviderUnavailable(provider, f"{path}: {why} ({exc})") from exc
        if not _is_busy(exc):
            raise
        raise ProviderUnavailable(
            provider, f"the database is locked by another process (waited {seconds:g} s)"
        ) from exc


def _retrying_while_busy(seconds: float) -> dict[str, Any]:
    """tenacity's arguments for running an operation again while the database is busy, up to ``seconds``.

    SQLite's busy handler waits for an ordinary lock, but some busy cases fail at once without it (waiting could
    deadlock): a WAL switch while another process creates or cleans up the file, a snapshot made stale by another
    process's commit. Run again from the start, such an operation succeeds once the other process is done."""
    return {
        "retry": tenacity.retry_if_exception(_is_busy),
        "stop": tenacity.stop_after_delay(seconds),
        "wait": tenacity.wait_random_exponential(multiplier=0.002, max=0.1),
        "reraise": True,
    }


class ThreadedConnection:
    """One SQLite connection and the single thread that uses it (see the module's docstring for ``inline``)."""

    def __init__(
        self, executor: ThreadPoolExecutor, connection: sqlite3.Connection, *, inline: bool, busy_timeout_ms: int
    ) -> None:
        self._executor = executor
        self._connection = connection
        self.inline = inline
        self._busy_timeout_ms = busy_timeout_ms
        # Operations queued or running on the worker. Not just the last one queued: one cancelled before it started
        # is done while an earlier one still runs. (set.add and set.discard are atomic: the worker's callbacks and
        # the loop both change it.)
        self._unfinished: set[futures.Future[Any]] = set()

    @classmethod
    async def open(
        cls, path: Path, *, busy_timeout: float, pragmas: Sequence[str], name: str = "sqlite", inline: bool = False
    ) -> ThreadedConnection:
        """Open ``path`` on a new worker thread and run ``pragmas`` (``"foreign_keys = ON"``...) on it.

        ``inline``: :meth:`call` may run operations on the caller's thread; the connection's own busy timeout is
        then 0 (an operation run on the worker thread waits ``busy_timeout`` seconds for another process's lock).
        """
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        busy_timeout_ms = int(busy_timeout * 1000)

        @tenacity.retry(**_retrying_while_busy(busy_timeout))
        def connect() -> sqlite3.Connection:
            connection = sqlite3.connect(
                path,
                timeout=busy_timeout,  # the pragmas below may wait (switching to WAL needs an exclusive lock)
                isolation_level=None,  # autocommit: transactions are explicit BEGIN ... COMMIT
                detect_types=sqlite3.PARSE_DECLTYPES,
                check_same_thread=not inline,
            )
            try:
                connection.row_factory = _dict_row
                for pragma in [*pragmas, f"busy_timeout = {0 if inline else busy_timeout_ms}"]:
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
        return cls(executor, connection, inline=inline, busy_timeout_ms=busy_timeout_ms)

    @property
    def idle(self) -> bool:
        """No operation is queued or running on the worker thread."""
        return not self._unfinished

    def submit(self, operation: Callable[[sqlite3.Connection], T], *, wait: bool = True) -> asyncio.Future[T]:
        """Queue ``operation`` on the worker thread and return its future at once: awaiting it is up to the
        caller (a background checkpoint is not awaited). ``wait``: an inline connection waits there for another
        process's lock, up to the busy timeout (``False``: it fails at once, as inline)."""
        wait_ms = self._busy_timeout_ms if self.inline and wait else None

        def on_worker(connection: sqlite3.Connection) -> T:
            if wait_ms is None:
                return operation(connection)
            connection.execute(f"PRAGMA busy_timeout = {wait_ms}").close()
            try:
                return operation(connection)
            finally:
                connection.execute("PRAGMA busy_timeout = 0").close()

        queued = self._executor.submit(on_worker, self._connection)
        self._unfinished.add(queued)
        queued.add_done_callback(self._unfinished.discard)
        return asyncio.wrap_future(queued)

    async def run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` on the worker thread."""
        return await self.submit(operation)

    async def call(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` on the caller's thread when the connection is ``inline`` and free, else (or when it
        would have to wait for another process's lock) on the worker thread, where it runs again while the
        database is busy, up to the busy timeout.

        Only for operations that are safe to run again after ``SQLITE_BUSY``: one statement, or statements inside
        a transaction (a busy statement changes nothing)."""
        if self.inline and self.idle:
            try:
                return operation(self._connection)
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise
        return await self._run_while_busy(operation)

    async def _run_while_busy(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` on the worker thread, again while the database is busy, up to the busy timeout in all.
        The retry loop is built only once a first try was busy (every read of the store comes this way)."""
        started = time.monotonic()
        try:
            return await self.run(operation)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
            left = self._busy_timeout_ms / 1000 - (time.monotonic() - started)
            if left <= 0:
                raise
        async for attempt in tenacity.AsyncRetrying(**_retrying_while_busy(left)):
            with attempt:
                return await self.run(operation)
        raise AssertionError("unreachable: tenacity re-raises the last error")

    async def execute(self, sql: str, params: Mapping[str, Any] | None = None, *, inline: bool = False) -> int:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> int:
            cursor = connection.execute(sql, values)
            try:
                return cursor.rowcount
            finally:
                cursor.close()

        return await self.call(operation) if inline else await self._run_while_busy(operation)

    async def execute_many(self, sql: str, rows: Sequence[Mapping[str, Any]], *, inline: bool = False) -> None:
        values = [sqlite_params(row) for row in rows]
        await (self.call if inline else self.run)(lambda connection: connection.executemany(sql, values).close())

    async def fetch_one(
        self, sql: str, params: Mapping[str, Any] | None = None, *, inline: bool = False
    ) -> dict[str, Any] | None:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> dict[str, Any] | None:
            cursor = connection.execute(sql, values)
            try:
                return cursor.fetchone()
            finally:
                cursor.close()

        return await self.call(operation) if inline else await self._run_while_busy(operation)

    async def fetch_all(
        self, sql: str, params: Mapping[str, Any] | None = None, *, inline: bool = False
    ) -> list[dict[str, Any]]:
        values = sqlite_params(params)

        def operation(connection: sqlite3.Connection) -> list[dict[str, Any]]:
            cursor = connection.execute(sql, values)
            try:
                return cursor.fetchall()
            finally:
                cursor.close()

        return await self.call(operation) if inline else await self._run_while_busy(operation)

    async def close(self) -> None:
        try:
            await self.submit(lambda connection: connection.close(), wait=False)
        finally:
            self._executor.shutdown(wait=True)
