"""The example store (a wrapper that logs slow statements) passes the relational-store contract around the
built-in SQLite store, and logs what is slow without its parameters."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from example_providers.store import TimedStore
from gateway.api import Migration
from gateway.contracts.store_contract import OpenStore, StoreContract
from gateway_plugins.stores.sqlite import SqliteStore


class TestTimedStoreContract(StoreContract):
    @pytest.fixture
    def open_store(self, tmp_path: Path) -> OpenStore:
        return lambda: TimedStore(SqliteStore(tmp_path / "store.sqlite3"))


@pytest.mark.anyio
async def test_slow_statements_are_logged_without_their_parameters(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = TimedStore(SqliteStore(tmp_path / "store.sqlite3"), slow_ms=0.0)  # every statement counts as slow
    try:
        await store.migrate("t", [Migration(1, "t", "CREATE TABLE t (secret TEXT)")])
        with caplog.at_level(logging.WARNING, logger="example_providers.store"):
            await store.execute("INSERT INTO t (secret) VALUES (:secret)", {"secret": "hunter2"})
            async with store.transaction() as tx:
                assert await tx.fetch_all("SELECT secret FROM t") == [{"secret": "hunter2"}]
    finally:
        await store.close()
    messages = [record.getMessage() for record in caplog.records]
    assert any("INSERT INTO t (secret) VALUES (:secret)" in message for message in messages)
    assert any("SELECT secret FROM t" in message for message in messages)
    assert not any("hunter2" in message for message in messages)
