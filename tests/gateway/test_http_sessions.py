"""Handshake-era MCP sessions over HTTP: one authenticated caller holds at most ``max_sessions_per_caller`` open
ones, so no caller can fill the server's table and lock every other handshake-era client out; a session ended, or
idle past ``session_idle_seconds``, no longer counts."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx

from gateway.testing import http_gateway
from tests.gateway.http_support import INITIALIZE, PLUGINS, config, key_manager, post_mcp


def test_one_caller_holds_at_most_its_quota_of_sessions_and_others_are_not_locked_out(tmp_path: Path) -> None:
    cfg = config(tmp_path, "api_key", transport={"max_sessions_per_caller": 2, "session_idle_seconds": 1.0})

    async def issue() -> list[str]:
        async with key_manager(cfg) as manager:
            return [(await manager.create_key(name=n, scopes=[], tenant="acme")).key for n in ("greedy", "other")]

    greedy, other = ({"X-API-Key": key} for key in anyio.run(issue))
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        opened = [post_mcp(base, INITIALIZE, greedy) for _ in range(2)]
        assert all(response.status_code == 200 for response in opened)
        refused = post_mcp(base, INITIALIZE, greedy)
        assert refused.status_code == 429 and refused.json()["id"] == INITIALIZE["id"]
        assert "max_sessions_per_caller" in refused.json()["error"]["message"]
        assert post_mcp(base, INITIALIZE, other).status_code == 200  # another caller is not locked out
        session = {"Mcp-Session-Id": opened[0].headers["Mcp-Session-Id"], "Mcp-Protocol-Version": "2025-06-18"}
        assert httpx.delete(f"{base}/mcp", headers={**greedy, **session}).status_code in (200, 204)
        assert post_mcp(base, INITIALIZE, greedy).status_code == 200  # one ended: room for one more
        assert post_mcp(base, INITIALIZE, greedy).status_code == 429
        time.sleep(1.2)
        assert post_mcp(base, INITIALIZE, greedy).status_code == 200  # the idle ones have ended
