"""The built-in packs state every annotation hint of their tools: a hint left unstated makes a client assume the
protocol's default (destructive, open world), so a read-only search would ask for confirmation."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.testing import running_gateway

pytestmark = pytest.mark.anyio


async def test_every_built_in_tool_states_all_four_hints(tmp_path: Path) -> None:
    config = {
        "gateway": {"data_dir": str(tmp_path)},
        "packs": {"enabled": ["gim", "thinking", "context"]},
        "providers": {"embedder": ["local"], "rate_limiter": "memory"},
    }
    async with running_gateway(config) as client:
        tools = (await client.list_tools()).tools
    assert len(tools) >= 10
    for tool in tools:
        hints = tool.annotations
        assert hints is not None, tool.name
        stated = (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint)
        assert None not in stated, (tool.name, stated)
