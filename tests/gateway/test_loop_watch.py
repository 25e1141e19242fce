"""A tool that blocks the event loop is named in a warning; one that awaits is not."""

from __future__ import annotations

import re
import time
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from gateway.api import CallContext, Tool, ToolPack, hookimpl
from gateway.testing import running_gateway

pytestmark = pytest.mark.anyio

BLOCKED = (
    "event loop blocked: every call waits (blocking work inside async def? run it in a worker thread: "
    "anyio.to_thread.run_sync)"
)


class Seconds(BaseModel):
    seconds: float


class Done(BaseModel):
    done: bool = True


class NapPack(ToolPack):
    name = "nap"

    def tools(self) -> list[Tool[Any, Any]]:
        async def block(args: Seconds, ctx: CallContext) -> Done:
            time.sleep(args.seconds)  # the bug the watch is for: a blocking call inside async def
            return Done()

        async def wait(args: Seconds, ctx: CallContext) -> Done:
            await anyio.sleep(args.seconds)
            return Done()

        return [
            Tool("nap_block", "Blocks the event loop.", Seconds, Done, block),
            Tool("nap_wait", "Waits without blocking.", Seconds, Done, wait),
        ]


class NapPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("nap", lambda context: NapPack())


def _config(tmp_path: Any, threshold: float) -> dict[str, Any]:
    return {
        "gateway": {"data_dir": str(tmp_path / "data"), "loop_stall_warning_seconds": threshold},
        "packs": {"enabled": ["nap"]},
        "sanitize": {"logs": ""},
    }


async def test_a_tool_blocking_the_loop_is_named_with_where_it_blocks(tmp_path: Any) -> None:
    async with running_gateway(_config(tmp_path, 0.2), extra_plugins=[("nap", NapPlugin())]) as client:
        with capture_logs() as logs:
            result = await client.call_tool("nap_block", {"seconds": 1.0})
            await anyio.sleep(0.5)  # the watch's next look sees the loop answer again
    assert not result.is_error
    # a stall of a loaded machine's own (at start-up, say) may be logged too: this one names the tool
    (blocked,) = [e for e in logs if e["event"] == BLOCKED and e["calls_in_flight"]]
    assert blocked["log_level"] == "warning"
    (call,) = blocked["calls_in_flight"]  # the tool and the call's correlation id, to find its other lines
    assert re.fullmatch(r"nap_block \([0-9a-f]{32}\)", call)
    assert 0.2 <= blocked["blocked_seconds"] < 1.0
    assert blocked["where"][0].startswith(f"{__file__}:") and blocked["where"][0].endswith(" in block")
    again = next(e for e in logs[logs.index(blocked) :] if e["event"] == "event loop answers again")
    assert 0.8 <= again["blocked_seconds"] <= 5


async def test_a_tool_that_awaits_is_not_reported(tmp_path: Any) -> None:
    async with running_gateway(_config(tmp_path, 0.9), extra_plugins=[("nap", NapPlugin())]) as client:
        with capture_logs() as logs:
            result = await client.call_tool("nap_wait", {"seconds": 1.0})
    assert not result.is_error
    assert not [e for e in logs if e["event"] == BLOCKED and any("nap_wait" in c for c in e["calls_in_flight"])]


async def test_zero_turns_the_watch_off(tmp_path: Any) -> None:
    async with running_gateway(_config(tmp_path, 0), extra_plugins=[("nap", NapPlugin())]) as client:
        with capture_logs() as logs:
            await client.call_tool("nap_block", {"seconds": 0.5})
            await anyio.sleep(0.3)
    assert not [e for e in logs if e["event"] in (BLOCKED, "event loop answers again")]
