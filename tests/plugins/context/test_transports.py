"""The acceptance loop with the official MCP client over a real stdio subprocess and over real Streamable HTTP."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from gateway.testing import http_gateway
from tests.plugins.context.loop import full_loop
from tests.plugins.context.support import context_config
from tests.plugins.gim.support import write_config

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_full_loop_over_stdio(repo: Path, embed_data_dir: Path, tmp_path: Path) -> None:
    config = context_config(embed=True, gateway={"log_level": "warning", "data_dir": embed_data_dir.as_posix()})
    path = write_config(tmp_path / "context.toml", config)
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(path)])
    async with Client(params, read_timeout_seconds=120) as client:
        await full_loop(client, repo)


async def test_full_loop_over_http(repo: Path, embed_data_dir: Path) -> None:
    with http_gateway(context_config(embed=True), embed_data_dir) as (base, _runtime):
        async with Client(f"{base}/mcp") as client:
            await full_loop(client, repo)
