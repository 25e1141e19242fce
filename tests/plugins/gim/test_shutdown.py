"""SIGTERM to a real GIM gateway serving MCP over stdio, its stdin still open: it stops cleanly (SQLite closed with
its WAL checkpointed, Qdrant Edge flushed and closed), and a restart sees every acknowledged submission in both
stores."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from gateway.testing import running_gateway
from tests.gateway.stdio_support import StdioPeer, events
from tests.plugins.gim.support import (
    NUMPY_ACTIONS,
    NUMPY_CAUSE,
    NUMPY_ERROR,
    call,
    gim_config,
    submission,
    write_config,
)
from tests.plugins.gim.test_consistency import stores_agree

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_sigterm_flushes_and_closes_both_stores(tmp_path: Path, data_dir: Path) -> None:
    config = write_config(tmp_path / "config.toml", gim_config(gateway={"data_dir": data_dir.as_posix()}))
    peer = StdioPeer(config)
    peer.open_session()
    arguments = submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS)
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "gim_submit_issue", "arguments": arguments},
        }
    )
    answer = peer.receive()["result"]["structuredContent"]
    assert list(data_dir.rglob("*.sqlite3-wal")), "the submission should sit in a SQLite WAL"

    status, stderr = peer.stop(signal.SIGTERM)

    assert status == -signal.SIGTERM, stderr
    assert "stopped" in [event["event"] for event in events(stderr)]
    assert not list(data_dir.rglob("*-wal")), "a SQLite store was left open"
    async with running_gateway(gim_config(), data_dir) as client:
        active = await stores_agree(client.runtime.packs["gim"].core)
        assert answer["issue_id"] in active
        found = await call(client, "gim_search_issues", {"error_message": NUMPY_ERROR})
        assert found["issues"][0]["issue_id"] == answer["master_issue_id"]
