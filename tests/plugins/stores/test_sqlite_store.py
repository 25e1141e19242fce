"""The ``sqlite`` store: the shared contract, plus what is particular to SQLite (pragmas, several processes)."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import multiprocessing.synchronize
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.api import Migration, ProviderContext, ProviderUnavailable
from gateway.contracts.store_contract import ITEMS, OpenStore, StoreContract
from gateway_plugins.stores import sqlite as sqlite_module
from gateway_plugins.stores.sqlite import SqliteStore, SqliteStoreConfig, create_sqlite_store


class TestSqliteStoreContract(StoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: SqliteStore(tmp_path / "store.sqlite3")


class TestSqliteStoreWithoutReaders(StoreContract):
    """``readers = 0``: every read goes through the writer connection."""

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: SqliteStore(tmp_path / "store.sqlite3", readers=0)


class TestSqliteStoreSynchronousFull(StoreContract):
    """``synchronous = FULL``: commits sync the disk, so they (and lone statements) run on the worker thread."""

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: SqliteStore(tmp_path / "store.sqlite3", synchronous="FULL")


class TestSqliteStoreCheckpointingAfterEveryCommit(StoreContract):
    """A background checkpoint after every commit: the next statements find the worker thread busy and queue
    behind it instead of running inline."""

    @pytest.fixture
    def open_store(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> OpenStore:
        monkeypatch.setattr(sqlite_module, "CHECKPOINT_EVERY", 1)
        return lambda: SqliteStore(tmp_path / "store.sqlite3")


def _context(tmp_path: Path, config: SqliteStoreConfig | None) -> ProviderContext:
    def no_provider(kind: str, name: str | None = None) -> object:
        raise AssertionError(f"unexpected provider lookup {kind}/{name}")

    return ProviderContext(kind="store", name="sqlite", config=config, data_dir=tmp_path, provider=no_provider)


@pytest.mark.anyio
async def test_the_file_lives_in_the_data_dir_with_wal_and_foreign_keys(tmp_path: Path) -> None:
    store = create_sqlite_store(_context(tmp_path, SqliteStoreConfig()))
    assert isinstance(store, SqliteStore)
    try:
        await store.migrate("contract", [ITEMS])
        async with store.transaction() as tx:
            assert await tx.fetch_one("PRAGMA foreign_keys") == {"foreign_keys": 1}
            # the writer's statements run inline and never wait: one that would is retried on its worker thread
            assert await tx.fetch_one("PRAGMA busy_timeout") == {"timeout": 0}
            assert await tx.fetch_one("PRAGMA wal_autocheckpoint") == {"wal_autocheckpoint": 0}
        assert await store.fetch_one("PRAGMA busy_timeout") == {"timeout": 10000}  # a reader: it waits
    finally:
        await store.close()
    assert store.path == tmp_path / "gateway.sqlite3"
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)  # persistent in the file


@pytest.mark.anyio
async def test_a_relative_path_is_under_the_data_dir_and_an_absolute_one_is_kept(tmp_path: Path) -> None:
    relative = create_sqlite_store(_context(tmp_path, SqliteStoreConfig(path="sub/dir/x.db")))
    absolute = create_sqlite_store(_context(tmp_path, SqliteStoreConfig(path=str(tmp_path / "abs.db"))))
    assert relative.path == tmp_path / "sub" / "dir" / "x.db"
    assert absolute.path == tmp_path / "abs.db"
    await relative.execute("CREATE TABLE t (x INTEGER)")  # parents are created on first use
    await relative.close()
    await absolute.close()
    assert relative.path.is_file()


def test_config_refuses_unknown_keys() -> None:
    with pytest.raises(ValueError, match="journal"):
        SqliteStoreConfig.model_validate({"journal": "delete"})


@pytest.mark.anyio
async def test_a_closed_store_refuses_work(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    await store.execute("CREATE TABLE t (x INTEGER)")
    await store.close()
    await store.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await store.fetch_all("SELECT x FROM t")


COUNTER = Migration(1, "counter", "CREATE TABLE hits (pid INTEGER, n INTEGER); CREATE TABLE total (n INTEGER)")


def _hammer(path: str, rounds: int, start: multiprocessing.synchronize.Event) -> None:
    """In a child process: migrate concurrently, then increment a shared total by read-then-write."""

    async def main() -> None:
        store = SqliteStore(Path(path))
        try:
            start.wait()
            await store.migrate("mp", [COUNTER])
            for n in range(rounds):
                async with store.transaction() as tx:  # BEGIN IMMEDIATE: no other process between read and write
                    row = await tx.fetch_one("SELECT n FROM total")
                    if row is None:
                        await tx.execute("INSERT INTO total (n) VALUES (1)")
                    else:
                        await tx.execute("UPDATE total SET n = :n", {"n": row["n"] + 1})
                    await tx.execute("INSERT INTO hits (pid, n) VALUES (:pid, :n)", {"pid": os.getpid(), "n": n})
        finally:
            await store.close()

    asyncio.run(main())


def test_several_processes_write_one_file_without_losing_updates(tmp_path: Path) -> None:
    path, rounds, processes = tmp_path / "shared.sqlite3", 150, 3
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    workers = [context.Process(target=_hammer, args=(str(path), rounds, start)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    with sqlite3.connect(path) as raw:
        assert raw.execute("SELECT n FROM total").fetchall() == [(rounds * processes,)]
        assert raw.execute("SELECT COUNT(DISTINCT pid) FROM hits").fetchone() == (processes,)
        assert raw.execute("SELECT COUNT(*) FROM schema_migrations WHERE namespace = 'mp'").fetchone() == (1,)


@pytest.mark.anyio
async def test_a_top_level_read_that_writes_goes_to_the_writer(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    try:
        await store.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        rows = await store.fetch_all(
            "WITH src AS (SELECT 'x' AS v) INSERT INTO t (v) SELECT v FROM src RETURNING id, v"
        )
        assert rows == [{"id": 1, "v": "x"}]
        assert await store.fetch_all("SELECT v FROM t") == [{"v": "x"}]
    finally:
        await store.close()


@contextlib.contextmanager
def _write_lock_held_elsewhere(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection (as another process would) holds the file's write lock until the block ends."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        other.execute("BEGIN IMMEDIATE")
        yield other
        other.execute("ROLLBACK")
    finally:
        other.close()


@pytest.mark.anyio
async def test_a_write_waits_for_another_connections_lock_without_blocking_the_event_loop(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db")
    ticks, stop = 0, asyncio.Event()

    async def tick() -> None:
        nonlocal ticks
        while not stop.is_set():
            await asyncio.sleep(0.01)
            ticks += 1

    async def in_transaction() -> None:
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO t VALUES (2)")

    try:
        await store.execute("CREATE TABLE t (x INTEGER)")
        with _write_lock_held_elsewhere(store.path):
            ticker = asyncio.create_task(tick())
            writes = [
                asyncio.create_task(store.execute("INSERT INTO t VALUES (1)")),
                asyncio.create_task(in_transaction()),
            ]
            await asyncio.sleep(0.5)
            assert not any(write.done() for write in writes)  # waiting for the lock...
            assert ticks >= 5  # ...on the worker thread: the event loop kept running (blocked, it would tick once)
        await asyncio.wait_for(asyncio.gather(*writes), 5)  # the lock is free: both go through
        stop.set()
        await ticker
        assert await store.fetch_all("SELECT x FROM t ORDER BY x") == [{"x": 1}, {"x": 2}]
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_lock_held_past_the_busy_timeout_fails_the_write_and_leaves_the_store_usable(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.db", busy_timeout=0.2)
    try:
        await store.execute("CREATE TABLE t (x INTEGER)")
        with _write_lock_held_elsewhere(store.path):
            with pytest.raises(ProviderUnavailable, match=r"store:sqlite: .* is locked by another process"):
                async with store.transaction() as tx:
                    await tx.execute("INSERT INTO t VALUES (1)")
            with pytest.raises(ProviderUnavailable, match=r"store:sqlite: .* is locked by another process"):
                await store.execute("INSERT INTO t VALUES (2)")
        async with store.transaction() as tx:
            await tx.execute("INSERT INTO t VALUES (3)")
        assert await store.fetch_all("SELECT x FROM t") == [{"x": 3}]
    finally:
        await store.close()


@pytest.mark.anyio
async def test_a_full_disk_is_a_retryable_outage_naming_the_file_and_loses_nothing(tmp_path: Path) -> None:
    """SQLite's own page limit stands in for a full disk: the same SQLITE_FULL a full file system gives."""
    store = SqliteStore(tmp_path / "s.db")
    try:
        await store.execute("CREATE TABLE t (x BLOB)")
        await store.execute("INSERT INTO t VALUES (x'00')")
        pages = (await store.fetch_one("PRAGMA page_count"))["page_count"]  # type: ignore[index]
        await store.execute(f"PRAGMA max_page_count = {pages + 1}")
        with pytest.raises(ProviderUnavailable, match=rf"store:sqlite: {store.path}: the disk is full"):
            async with store.transaction() as tx:
                await tx.execute("INSERT INTO t VALUES (zeroblob(1000000))")
        with pytest.raises(ProviderUnavailable, match="the disk is full"):
            await store.execute("INSERT INTO t VALUES (zeroblob(1000000))")
        assert await store.fetch_all("SELECT length(x) AS n FROM t") == [{"n": 1}]
    finally:
        await store.close()


@pytest.mark.anyio
async def test_the_writer_checkpoints_the_wal_as_commits_accumulate(tmp_path: Path) -> None:
    """The writer's automatic checkpoint is off (it would run inside an inline commit); its own, every
    CHECKPOINT_EVERY commits, keeps the WAL from growing without end."""
    store = SqliteStore(tmp_path / "s.db")
    every = sqlite_module.CHECKPOINT_EVERY
    wal = store.path.with_name(store.path.name + "-wal")
    try:
        await store.execute("CREATE TABLE t (x INTEGER, padding TEXT)")
        for n in range(5 * every):
            await store.execute("INSERT INTO t VALUES (:n, :padding)", {"n": n, "padding": "x" * 3000})
            if n == every - 2:
                before_any_checkpoint = wal.stat().st_size
        after_five_rounds = wal.stat().st_size
    finally:
        await store.close()
    assert after_five_rounds < 2 * before_any_checkpoint  # without checkpoints: about five times as large
    with sqlite3.connect(store.path) as raw:
        assert raw.execute("SELECT COUNT(*) FROM t").fetchone() == (5 * every,)


def _open_new_files_together(directory: str, rounds: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    """In a child process: each round, open the same new database file as the other processes, at one moment."""

    async def main() -> None:
        for round_ in range(rounds):
            barrier.wait(timeout=60)
            store = SqliteStore(Path(directory) / f"new-{round_}.sqlite3")
            try:
                await store.migrate("mp", [COUNTER])
                async with store.transaction() as tx:
                    await tx.execute("INSERT INTO hits (pid, n) VALUES (:pid, :n)", {"pid": os.getpid(), "n": round_})
            finally:
                await store.close()

    try:
        asyncio.run(main())
    except BaseException:
        barrier.abort()  # the others stop waiting for this one
        raise


def test_processes_opening_a_new_file_at_once_all_get_it(tmp_path: Path) -> None:
    """Two assistants started on one data dir create its databases together (the rate limiter's on their first
    search). Switching a new file to WAL can fail with ``SQLITE_BUSY`` at once, without SQLite's busy handler
    waiting; the open must wait out the busy timeout like any other statement instead of failing the call."""
    processes, rounds = 4, 150
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    workers = [
        context.Process(target=_open_new_files_together, args=(str(tmp_path), rounds, barrier))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=180)
    assert [worker.exitcode for worker in workers] == [0] * processes

    async def rows(round_: int) -> int:
        store = SqliteStore(tmp_path / f"new-{round_}.sqlite3")
        try:
            return len(await store.fetch_all("SELECT pid FROM hits"))
        finally:
            await store.close()

    assert [asyncio.run(rows(round_)) for round_ in range(rounds)] == [processes] * rounds
