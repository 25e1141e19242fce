"""The ``sqlite`` store: the shared contract, plus what is particular to SQLite (pragmas, several processes)."""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.synchronize
import os
import sqlite3
from pathlib import Path

import pytest

from gateway.api import Migration, ProviderContext
from gateway_plugins.stores.sqlite import SqliteStore, SqliteStoreConfig, create_sqlite_store
from tests.contracts.store_contract import ITEMS, OpenStore, StoreContract


class TestSqliteStoreContract(StoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: SqliteStore(tmp_path / "store.sqlite3")


class TestSqliteStoreWithoutReaders(StoreContract):
    """``readers = 0``: every read goes through the writer connection."""

    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: SqliteStore(tmp_path / "store.sqlite3", readers=0)


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
            assert await tx.fetch_one("PRAGMA busy_timeout") == {"timeout": 10000}
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
