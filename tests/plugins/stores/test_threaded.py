"""The SQLite connection driven from asyncio: when it runs an operation inline and when on its thread."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from gateway_plugins.stores.threaded import ThreadedConnection

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_cancelled_operation_frees_the_connection_once_the_others_are_done(tmp_path: Path) -> None:
    connection = await ThreadedConnection.open(tmp_path / "t.db", busy_timeout=1.0, pragmas=[], inline=True)
    release, on_caller = threading.Event(), []
    try:
        busy = asyncio.ensure_future(connection.run(lambda c: release.wait(10)))
        queued = asyncio.ensure_future(connection.run(lambda c: c.execute("SELECT 1").fetchall()))
        await asyncio.sleep(0.05)
        assert not connection.idle  # the worker holds the first operation...
        queued.cancel()  # ...and the second is cancelled before it starts
        await asyncio.sleep(0)
        assert not connection.idle  # the first still runs: an inline call now would share the connection with it

        def where_meanwhile(c: sqlite3.Connection) -> None:
            on_caller.append(threading.current_thread() is threading.main_thread())

        meanwhile = asyncio.ensure_future(connection.call(where_meanwhile))
        await asyncio.sleep(0.05)
        release.set()
        await meanwhile
        assert on_caller == [False]  # it waited its turn on the worker thread
        on_caller.clear()
        await busy
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert connection.idle

        def where(c: sqlite3.Connection) -> None:
            on_caller.append(threading.current_thread() is threading.main_thread())

        await connection.call(where)
        assert on_caller == [True]  # inline again, not hopping for the rest of its life
    finally:
        release.set()
        await connection.close()
