"""A gateway launched over stdio that cannot start answers the client's ``initialize`` with an error saying why,
rather than leaving it a bare "Connection closed"; and says it on stderr too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from tests.plugins.gim.support import gim_config, write_config
from tests.plugins.vector_stores.test_qdrant_edge_processes import next_message, spawn, stop

pytestmark = pytest.mark.anyio


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def initialize_error(config: Path) -> str:
    """The message of the error the gateway answers ``initialize`` with (the SDK's stdio client launches it)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)])
    with pytest.raises(BaseException) as caught:
        async with Client(params, read_timeout_seconds=120):
            pass
    found = [e for e in leaves(caught.value) if isinstance(e, MCPError)]
    assert found, f"no MCP error among {leaves(caught.value)!r}"
    return str(found[0])


async def test_a_config_error_reaches_the_client(tmp_path: Path) -> None:
    config = gim_config(gateway={"data_dir": (tmp_path / "data").as_posix()})
    config["providers"]["vector_store"] = "faiss"
    path = write_config(tmp_path / "config.toml", config)
    message = await initialize_error(path)
    assert "the gateway could not start" in message
    assert "no vector_store provider 'faiss' is installed" in message

    # The same seen on the wire: one JSON-RPC error per request, the reason on stderr, exit status 1.
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "serve", "--config", str(path)],
        input=json.dumps(request) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    answer = json.loads(done.stdout)
    assert answer["id"] == 1 and "no vector_store provider 'faiss'" in answer["error"]["message"]
    assert "Error: the gateway could not start" in done.stderr


async def test_a_store_held_by_a_process_that_does_not_share_it_reaches_the_client(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    store_dir = data_dir / "providers" / "vector_store" / "qdrant-edge"
    holder = spawn("shared-hold", store_dir, EDGE_CONFIG='{"share": false}')
    try:
        pid = next_message(holder)["ready"]
        config = gim_config(
            gateway={"data_dir": data_dir.as_posix()},
            plugins={"vector_store": {"qdrant-edge": {"takeover_timeout_seconds": 0.5}}},
        )
        message = await initialize_error(write_config(tmp_path / "config.toml", config))
        assert "the gateway could not start" in message
        assert f"held by another process (pid {pid}) that does not serve it" in message
    finally:
        assert stop(holder) == 0
