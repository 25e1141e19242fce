"""The ``sqlite`` relational store: one database file under the provider's data dir.

WAL journal, foreign keys on, a busy timeout. Writes go through a single writer connection, one transaction at a
time within the process (an asyncio lock) and across processes (``BEGIN IMMEDIATE`` takes SQLite's write lock at
the start of the transaction, so two processes never both read-then-write the same rows). Reads outside a
transaction use read-only connections (one by default), which WAL lets run while a write is in progress. Each
connection lives on a worker thread of its own (:mod:`gateway_plugins.stores.threaded`).

The writer's statements run on the event loop's thread when they cannot wait, because a thread hop costs far more
than a point statement: inside a transaction (it holds the write lock), and the ``BEGIN`` or lone statement that
finds the lock free. One that finds another process holding it goes to the worker thread and waits there. With
``synchronous = NORMAL`` a commit does not sync the disk, so it runs inline too, and the writer checkpoints the WAL
on its worker thread every :data:`CHECKPOINT_EVERY` commits instead of inside a commit; with ``FULL`` every
commit syncs, so commits (and lone statements) go to the worker thread. ``executemany`` of more than
:data:`INLINE_ROWS` rows goes there too.

Types: see :mod:`gateway_plugins.stores`.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio
import structlog
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import Migration, ProviderContext, StoreIntegrityError
from gateway.api.stores import Params, Row
from gateway_plugins.stores.guard import TransactionGuard, TransactionState
from gateway_plugins.stores.sql import (
    MIGRATIONS_TABLE,
    check_applied,
    ordered_migrations,
    register_sqlite_converters,
    split_script,
)
from gateway_plugins.stores.threaded import ThreadedConnection, unusable_is_unavailable

log = structlog.get_logger(__name__)

_READ_ONLY = re.compile(r"\s*(?:SELECT|WITH|PRAGMA|EXPLAIN|VALUES)\b", re.IGNORECASE)
"""Statements sent to the read-only connections (one that writes after all is retried on the writer)."""

register_sqlite_converters()

CHECKPOINT_EVERY = 200
"""Commits between two WAL checkpoints of the writer (SQLite's automatic checkpoint comes after 1000 pages; a
transaction of this store's callers writes a few pages)."""
INLINE_ROWS = 64
"""``executemany`` with more rows than this runs on the writer's worker thread (a bulk write takes milliseconds)."""

_MIGRATIONS_DDL = f"""
CREATE TABLE IF NOT EXISTS {MIGRATIONS_TABLE} (
    namespace TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    applied_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (namespace, version)
)
"""


class SqliteStoreConfig(BaseModel):
    """``[plugins.store.sqlite]``."""

    model_config = ConfigDict(extra="forbid")

    path: str = "gateway.sqlite3"
    """The database file; a relative path is taken from the provider's data dir."""
    busy_timeout: float = Field(default=10.0, gt=0)
    """Seconds to wait for another process's write lock before failing with ``database is locked``."""
    readers: int = Field(default=1, ge=0, le=32)
    """Read-only connections for reads outside transactions (0: every read goes through the writer). More than one
    helps only with slow reads (large scans): for point reads the thread hand-offs cost more than they save."""
    synchronous: Literal["NORMAL", "FULL"] = "NORMAL"
    """``NORMAL`` is durable across application crashes in WAL mode; ``FULL`` also across power loss."""


class _Transaction(TransactionState):
    """The :class:`gateway.api.Transaction` of the writer connection."""

    def __init__(self, connection: ThreadedConnection) -> None:
        super().__init__()
        self._connection = connection

    # Statements run inline (see the module's docstring): the transaction holds the write lock.

    async def _integrity_failure(self, exc: sqlite3.IntegrityError) -> StoreIntegrityError:
        with anyio.CancelScope(shield=True):
            await self._connection.call(_rollback)
        self.rolled_back = True
        return StoreIntegrityError(str(exc))

    async def execute(self, sql: str, params: Params | None = None) -> int:
        self._check()
        try:
            return await self._connection.execute(sql, params, inline=True)
        except sqlite3.IntegrityError as exc:
            raise await self._integrity_failure(exc) from exc

    async def execute_many(self, sql: str, rows: Sequence[Params]) -> None:
        self._check()
        try:
            await self._connection.execute_many(sql, rows, inline=len(rows) <= INLINE_ROWS)
        except sqlite3.IntegrityError as exc:
            raise await self._integrity_failure(exc) from exc

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        self._check()
        try:
            return await self._connection.fetch_one(sql, params, inline=True)
        except sqlite3.IntegrityError as exc:  # INSERT ... RETURNING
            raise await self._integrity_failure(exc) from exc

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        self._check()
        try:
            return await self._connection.fetch_all(sql, params, inline=True)
        except sqlite3.IntegrityError as exc:
            raise await self._integrity_failure(exc) from exc


def _log_checkpoint_failure(done: asyncio.Future[Any]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.warning("sqlite checkpoint failed", error=str(done.exception()))


def _rollback(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:  # SQLite has rolled back by itself after some errors (a full disk, say)
        connection.execute("ROLLBACK")


def _begin_immediate(connection: sqlite3.Connection) -> None:
    if connection.in_transaction:  # left open by an operation interrupted mid-way: nothing of it may survive
        connection.execute("ROLLBACK")
    connection.execute("BEGIN IMMEDIATE")


class SqliteStore:
    """:class:`gateway.api.RelationalStore` on a SQLite file. Connections open on first use."""

    def __init__(
        self, path: Path, *, busy_timeout: float = 10.0, readers: int = 1, synchronous: str = "NORMAL"
    ) -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"unknown SQLite synchronous mode {synchronous!r}")
        self.path = path
        self._busy_timeout = busy_timeout
        self._reader_count = readers
        self._synchronous = synchronous
        self._commit_inline = synchronous.upper() in ("OFF", "NORMAL")  # a commit that does not sync the disk
        self._commits_since_checkpoint = 0
        self._writer: ThreadedConnection | None = None
        self._readers: asyncio.Queue[ThreadedConnection] = asyncio.Queue()
        self._all_readers: list[ThreadedConnection] = []
        self._write_lock = asyncio.Lock()
        self._open_lock = asyncio.Lock()
        self._guard = TransactionGuard(self)
        self._closed = False

    @property
    def dialect(self) -> Literal["sqlite"]:
        return "sqlite"

    async def _ensure_open(self) -> ThreadedConnection:
        if self._closed:
            raise RuntimeError(f"the SQLite store {self.path} is closed")
        if self._writer is not None:
            return self._writer
        async with self._open_lock:
            if self._writer is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self._unavailable_when_unusable():
                    writer = await self._open_writer()
                try:
                    for _ in range(self._reader_count):
                        reader = await ThreadedConnection.open(
                            self.path, busy_timeout=self._busy_timeout, pragmas=["query_only = ON"], name="sqlite-read"
                        )
                        self._all_readers.append(reader)
                        self._readers.put_nowait(reader)
                except BaseException:
                    await self._close_connections(writer)
                    raise
                self._writer = writer
                log.debug("sqlite store opened", path=str(self.path), readers=self._reader_count)
        return self._writer

    async def _open_writer(self) -> ThreadedConnection:
        return await ThreadedConnection.open(
            self.path,
            busy_timeout=self._busy_timeout,
            pragmas=[
                "journal_mode = WAL",
                f"synchronous = {self._synchronous}",
                "foreign_keys = ON",
                *(["wal_autocheckpoint = 0"] if self._commit_inline else []),  # see _committed
            ],
            name="sqlite-writer",
            inline=True,
        )

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[_Transaction]:
        """A write transaction (``BEGIN IMMEDIATE``): committed when the block ends, rolled back if it raises."""
        self._guard.refuse_nesting()
        writer = await self._ensure_open()
        async with self._write_lock:
            with self._guard.active():
                with anyio.CancelScope(shield=True), self._unavailable_when_unusable():  # a late BEGIN must not leak
                    await writer.call(_begin_immediate)
                tx = _Transaction(writer)
                try:
                    with self._unavailable_when_unusable():  # a full disk mid-transaction, say: named, retryable
                        yield tx
                except BaseException:
                    if not tx.rolled_back:
                        with anyio.CancelScope(shield=True):
                            await writer.call(_rollback)
                    raise
                else:
                    if not tx.rolled_back:
                        with self._unavailable_when_unusable():
                            await self._commit(writer)
                finally:
                    tx.finished = True

    def _unavailable_when_unusable(self) -> Any:
        return unusable_is_unavailable("store:sqlite", self.path, self._busy_timeout)

    async def _commit(self, writer: ThreadedConnection) -> None:
        try:
            await writer.execute("COMMIT", inline=self._commit_inline)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                in_transaction = await writer.run(lambda connection: connection.in_transaction)
                if in_transaction:
                    await writer.execute("ROLLBACK")
            if isinstance(exc, sqlite3.IntegrityError):  # a deferred foreign key
                raise StoreIntegrityError(str(exc)) from exc
            raise
        self._committed(writer)

    def _committed(self, writer: ThreadedConnection) -> None:
        """Count a commit; every :data:`CHECKPOINT_EVERY` commits, checkpoint the WAL on the worker thread.

        The writer's automatic checkpoint is off when commits run inline: it would run inside a commit, on the
        event loop, and sync the disk. The checkpoint is not awaited: later statements of the writer queue behind
        it on the worker thread. ``PASSIVE`` never waits for readers or other processes' writers."""
        if not self._commit_inline:
            return
        self._commits_since_checkpoint += 1
        if self._commits_since_checkpoint < CHECKPOINT_EVERY:
            return
        self._commits_since_checkpoint = 0
        try:
            done = writer.submit(lambda connection: connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall())
        except RuntimeError:  # closing: the last connection's close checkpoints anyway
            return
        done.add_done_callback(_log_checkpoint_failure)

    async def execute(self, sql: str, params: Params | None = None) -> int:
        """One statement in a transaction of its own (SQLite runs a lone statement atomically)."""
        self._guard.refuse_nesting()
        writer = await self._ensure_open()
        async with self._write_lock:
            try:
                with self._unavailable_when_unusable():
                    changed = await writer.execute(sql, params, inline=self._commit_inline)
            except sqlite3.IntegrityError as exc:
                raise StoreIntegrityError(str(exc)) from exc
            self._committed(writer)
            return changed

    async def _fetch(self, fetch: Literal["one", "all"], sql: str, params: Params | None) -> Any:
        """A read on a read-only connection; a statement that writes (``INSERT ... RETURNING``) goes to the
        writer, as a transaction of its own."""
        writer = await self._ensure_open()
        if self._all_readers and _READ_ONLY.match(sql):
            reader = await self._readers.get()
            try:
                return await (reader.fetch_one if fetch == "one" else reader.fetch_all)(sql, params)
            except sqlite3.OperationalError as exc:
                if (exc.sqlite_errorcode or 0) & 0xFF != sqlite3.SQLITE_READONLY:  # or an extended code of it
                    with self._unavailable_when_unusable():  # an I/O error, say: named and retryable
                        raise
            finally:
                self._readers.put_nowait(reader)
        self._guard.refuse_nesting()
        async with self._write_lock:
            try:
                with self._unavailable_when_unusable():
                    fetched = await (writer.fetch_one if fetch == "one" else writer.fetch_all)(
                        sql, params, inline=self._commit_inline
                    )
            except sqlite3.IntegrityError as exc:
                raise StoreIntegrityError(str(exc)) from exc
            self._committed(writer)
            return fetched

    async def fetch_one(self, sql: str, params: Params | None = None) -> Row | None:
        """The first row of a statement run outside any transaction (a read sees what is committed)."""
        return await self._fetch("one", sql, params)

    async def fetch_all(self, sql: str, params: Params | None = None) -> list[Row]:
        """Every row of a statement run outside any transaction."""
        return await self._fetch("all", sql, params)

    async def migrate(self, namespace: str, migrations: Sequence[Migration]) -> None:
        """Apply the migrations of ``namespace`` not yet applied, in version order, each in its own transaction.

        Safe to run from several processes at once: each migration re-checks, under the write lock, whether
        another process applied it meanwhile.
        """
        ordered = ordered_migrations(namespace, migrations)
        await self.execute(_MIGRATIONS_DDL)
        applied = await self._applied(namespace)
        for migration in ordered:
            if migration.version in applied:
                check_applied(namespace, migration, applied[migration.version])
                continue
            async with self.transaction() as tx:
                row = await tx.fetch_one(
                    f"SELECT name FROM {MIGRATIONS_TABLE} WHERE namespace = :namespace AND version = :version",
                    {"namespace": namespace, "version": migration.version},
                )
                if row is not None:
                    check_applied(namespace, migration, row["name"])
                    continue
                for statement in split_script(migration.for_dialect("sqlite")):
                    await tx.execute(statement)
                await tx.execute(
                    f"INSERT INTO {MIGRATIONS_TABLE} (namespace, version, name, applied_at)"
                    " VALUES (:namespace, :version, :name, :applied_at)",
                    {
                        "namespace": namespace,
                        "version": migration.version,
                        "name": migration.name,
                        "applied_at": datetime.now(UTC),
                    },
                )
            log.info("migration applied", store="sqlite", namespace=namespace, version=migration.version)
        newest = max(applied, default=0)
        if ordered and newest > ordered[-1].version:
            log.warning("database schema is newer than the code", namespace=namespace, applied=newest)

    async def _applied(self, namespace: str) -> dict[int, str]:
        rows = await self.fetch_all(
            f"SELECT version, name FROM {MIGRATIONS_TABLE} WHERE namespace = :namespace", {"namespace": namespace}
        )
        return {row["version"]: row["name"] for row in rows}

    async def _close_connections(self, writer: ThreadedConnection | None) -> None:
        readers = [await self._readers.get() for _ in self._all_readers]  # waits for the reads in progress
        self._all_readers = []
        for connection in [*readers, *([writer] if writer else [])]:
            try:
                await connection.close()
            except Exception:
                log.exception("closing a sqlite connection failed", path=str(self.path))

    async def close(self) -> None:
        """Close every connection (waits for the transaction in progress, if any)."""
        if self._closed:
            return
        self._closed = True
        async with self._open_lock, self._write_lock:
            writer, self._writer = self._writer, None
            await self._close_connections(writer)


def create_sqlite_store(ctx: ProviderContext) -> SqliteStore:
    """Provider factory of ``store``/``sqlite``."""
    config = ctx.config if isinstance(ctx.config, SqliteStoreConfig) else SqliteStoreConfig()
    path = Path(config.path).expanduser()
    if not path.is_absolute():
        path = ctx.data_dir / path
    return SqliteStore(path, busy_timeout=config.busy_timeout, readers=config.readers, synchronous=config.synchronous)
