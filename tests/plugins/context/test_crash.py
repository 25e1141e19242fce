"""kill -9 of a real gateway process in the middle of an index job: nothing already indexed is lost or redone, and
the next ``start`` finishes the job."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from gateway.testing import running_gateway
from tests.plugins.context.support import add_file_connector, call, context_config, index_and_wait
from tests.plugins.gim.support import write_config
from tests.serve_process import serve_pid

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

FILES = 400


def _stored(data_dir: Path) -> dict[str, str]:
    db = sqlite3.connect(data_dir / "providers" / "store" / "sqlite" / "gateway.sqlite3")
    try:
        return dict(db.execute("SELECT path, id FROM ctx_files").fetchall())
    finally:
        db.close()


async def test_kill_9_mid_index_then_start_resumes(tmp_path: Path, data_dir: Path) -> None:
    repo = tmp_path / "big"
    for n in range(FILES):
        module = repo / f"pkg{n % 10}" / f"module_{n}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text(
            "\n\n".join(
                f"def function_{n}_{k}(value):\n    return value * {k}  # step {k} of module {n}" for k in range(12)
            )
        )
    config = write_config(
        tmp_path / "c.toml", context_config(gateway={"log_level": "warning", "data_dir": data_dir.as_posix()})
    )
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)])
    try:
        async with Client(params, read_timeout_seconds=60) as client:
            await add_file_connector(client, repo, name="big")
            await call(client, "context.index_control", {"action": "start"})
            while (await call(client, "context.index_control", {"action": "status"}))["current_job"]["progress"][
                "completed"
            ] < 60:
                await asyncio.sleep(0.02)
            os.kill(serve_pid(config), signal.SIGKILL)
            await call(client, "context.index_control", {"action": "status"})
    except BaseException as exc:  # the connection dies with the server
        if isinstance(exc, KeyboardInterrupt):
            raise
    before = _stored(data_dir)
    assert 0 < len(before) < FILES, "the kill did not land mid-job"
    async with running_gateway(context_config(), data_dir) as client:
        searched = await call(client, "context.search", {"query": "function_7_3", "top_k": 1})
        assert searched["query_metadata"]["index_status"] == "ready"  # the dead job is not reported as running
        (big,) = (await call(client, "context.connector_management", {"action": "list"}))["connectors"]
        assert big["status"] == "stopped" and "interrupted" in big["stats"]["last_error"]
        status = await call(client, "context.index_control", {"action": "status"})
        assert status["current_job"]["status"] == "interrupted"  # its heartbeat stopped with its process
        done = await index_and_wait(client)
        assert done["status"] == "completed"
        after = _stored(data_dir)
        assert len(after) == FILES
        assert all(after[path] == file_id for path, file_id in before.items()), "finished files were redone"
        hit = await call(client, "context.search", {"query": "function_7_3", "top_k": 1})
        assert hit["results"][0]["metadata"]["symbol"] == "function_7_3"
