"""Stdio upstreams that fail in awkward ways: a crash whose helper ignores SIGTERM and holds the wire, a server
stuck in ``initialize`` while the gateway stops (or while it starts, when a stop signal comes), a secret that is
unset, a call that times out after queueing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from structlog.testing import capture_logs

from gateway.api import Principal
from gateway.inventory import upstream_lines
from gateway.testing import running_gateway
from tests.plugins.remote.support import (
    PY_SERVER,
    alive,
    eventually,
    py_stdio_server,
    remote_config,
    servers_under,
    wait_until,
    write_toml,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ME = os.getpid()


def _error(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return json.loads(result.content[0].text)["error"]


def _helpers(state: Path) -> list[int]:
    """The pids (sh, its sleep) of every TERM-ignoring helper a server started (PY_SERVER_STUBBORN_CHILD)."""
    return [int(pid) for path in state.glob("stubborn-*.pids") for pid in path.read_text().split()]


async def test_a_crash_whose_helper_ignores_sigterm_fails_at_once_and_restarts(tmp_path: Path):
    """The helper inherited the server's stdout: left alive, it would hide the crash until every call timed out."""
    state = tmp_path / "state"
    server = {
        **py_stdio_server(state, call_timeout_seconds=8, restart_backoff_seconds=0.2),
        "env": {"PY_SERVER_STUBBORN_CHILD": "1"},
    }
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        assert await eventually(lambda: len(_helpers(state)) == 2)
        first = _helpers(state)
        started = anyio.current_time()
        crashed = _error(await client.call_tool("py_crash", {}))
        took = anyio.current_time() - started
        helpers_gone = await eventually(lambda: not any(alive(pid) for pid in first), timeout=10)
        after = await client.call_tool("py_echo", {"text": "back"})
        starts = upstream.starts
        every = _helpers(state)
    assert crashed["code"] == "upstream_unavailable" and crashed["details"]["upstream"] == "py", crashed
    assert took < 5, f"the crash was seen after {took:.1f} s"
    assert helpers_gone, [pid for pid in first if alive(pid)]
    assert after.structured_content == {"result": "back"} and starts == 2
    assert len(every) == 4 and await eventually(lambda: not any(alive(pid) for pid in every), timeout=10)


async def test_stop_abandons_a_server_stuck_in_initialize(tmp_path: Path):
    """Stopping does not wait for the connect timeout (60 s here) nor for the stop's own limit (15 s)."""
    server = py_stdio_server(tmp_path / "state", connect_timeout_seconds=60)
    async with running_gateway(remote_config(tmp_path, [server])):  # a catalogue copy: the next start is lazy
        pass
    hanging = {**server, "env": {"PY_SERVER_HANG_ONCE": "1"}}
    async with running_gateway(remote_config(tmp_path, [hanging])) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        upstream.want()
        assert await eventually(lambda: (tmp_path / "state" / "hung-once").exists())
        state = upstream.state
        started = anyio.current_time()
    stopped_in = anyio.current_time() - started
    assert state == "starting"
    assert stopped_in < 8, f"stopping took {stopped_in:.1f} s"
    assert await eventually(lambda: not servers_under(ME, str(PY_SERVER)))


async def test_a_server_whose_secret_is_unset_is_down_once_not_retried(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    plain = py_stdio_server(tmp_path / "state", restart_backoff_seconds=0.1, max_backoff_seconds=0.1)
    async with running_gateway(remote_config(tmp_path, [plain])):  # a catalogue copy: its tools are listed
        pass
    server = {**plain, "env": {"API_KEY": {"env": "NO_SUCH_KEY"}}}
    with capture_logs() as logs:
        async with running_gateway(remote_config(tmp_path, [server])) as client:
            upstream = client.runtime.packs["remote"].upstreams[0]
            failed = [_error(await client.call_tool("py_echo", {"text": "x"})) for _ in range(3)]
            await anyio.sleep(1)  # ten backoffs
            starts, status = upstream.starts, upstream.status(0)
    downs = [e for e in logs if e["event"].startswith("upstream down")]
    assert starts == 1 and len(downs) == 1 and downs[0]["log_level"] == "error", downs
    assert status.state == "down" and "NO_SUCH_KEY" in (status.last_error or "")
    for error in failed:
        assert error["code"] == "upstream_unavailable" and "NO_SUCH_KEY" in error["message"]
        assert "retry_after" not in error["details"]


async def test_a_timeout_after_queueing_for_a_slot_says_so(tmp_path: Path):
    server = py_stdio_server(tmp_path / "state", max_concurrency=1, call_timeout_seconds=2)
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        answers: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:

            async def call(key: str, seconds: float) -> None:
                answers[key] = await client.call_tool("py_slow", {"seconds": seconds, "steps": 1})

            tg.start_soon(call, "first", 1.2)
            await anyio.sleep(0.3)
            tg.start_soon(call, "queued", 5)
    assert not answers["first"].is_error
    error = _error(answers["queued"])
    assert error["code"] == "upstream_timeout" and error["details"]["queued"] is False
    assert "queued for a free slot" in error["message"] and 0.5 < error["details"]["queued_seconds"] < 2, error


async def test_a_tool_name_no_client_could_use_is_left_out_and_logged_once(tmp_path: Path):
    """Too long for MCP, or holding blanks or control characters: clients, log lines and metric labels choke on it."""
    odd = ["x" * 200, "two words", "line\nbreak"]
    with capture_logs() as logs:
        async with running_gateway(remote_config(tmp_path, [py_stdio_server(tmp_path / "state")])) as client:
            for name in [*odd, "fine"]:
                await client.call_tool("py_grow", {"name": name})
            assert await eventually(lambda: "py_fine" in client.runtime.tools)
            listed = {t.name for t in (await client.list_tools()).tools}
            await client.list_tools()
            scraped = client.runtime.metrics.render().decode()
            (summary,) = upstream_lines(client.runtime)  # the operator's count: what is served, not what is offered
    assert "py_fine" in listed and not any(f"py_{name}" in listed for name in odd)
    assert f"remote/py  stdio  up  {len(listed)} tools" in summary, summary
    assert "two words" not in scraped and "x" * 200 not in scraped
    told = [e["tool"] for e in logs if e["event"] == "remote tool left out: not a usable tool name"]
    assert sorted(told) == sorted(f"py_{name}"[:200] for name in odd)  # a name is logged cut at 200


def test_a_stop_signal_while_a_server_is_stuck_in_initialize_at_start_up_stops_at_once(tmp_path: Path):
    """An eager server (or one never seen: no catalogue copy) is waited for at start-up, up to the connect timeout
    (60 s here); SIGTERM meanwhile abandons the start, stops what started, and ends the process by the signal."""
    state = tmp_path / "state"
    hanging = {**py_stdio_server(state, connect_timeout_seconds=60), "env": {"PY_SERVER_HANG_ONCE": "1"}}
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [hanging]))
    command = [sys.executable, "-m", "gateway", "serve", "--config", str(config)]
    gateway = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: (state / "hung-once").exists())
        sent = time.monotonic()
        gateway.send_signal(signal.SIGTERM)
        _, stderr = gateway.communicate(timeout=30)
        took = time.monotonic() - sent
    finally:
        if gateway.poll() is None:
            gateway.kill()
            gateway.wait()
    assert took < 8, f"stopping took {took:.1f} s"
    assert gateway.returncode == -signal.SIGTERM, stderr.decode()
    assert '"event":"stopped"' in stderr.decode()
    assert wait_until(lambda: not servers_under(ME, str(PY_SERVER)))


async def test_a_tool_of_a_server_never_up_is_unknown_saying_the_server_is_down(tmp_path: Path):
    """A first run (no catalogue copy) of a server that fails at start: its tools are not known, so a call names the
    server and why, not only "Unknown tool"."""
    server = {
        **py_stdio_server(tmp_path / "state", restart_backoff_seconds=30, scope="py:use"),
        "env": {"PY_SERVER_FAIL": "1"},
    }
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("py_echo", {"text": "x"})
        with pytest.raises(MCPError) as elsewhere:
            await client.call_tool("other_echo", {"text": "x"})
        pack = client.runtime.packs["remote"]
        assert pack.why_not_served("py_echo", Principal(subject="s", scopes=frozenset({"py:use"})))
        assert pack.why_not_served("py_echo", Principal(subject="s")) is None  # not the server of such a caller
    message = str(refused.value)
    assert message.startswith("Unknown tool: py_echo") and "remote server 'py'" in message, message
    assert "is down" in message and "told to fail" not in message  # its last error is the log's, not the caller's
    assert str(elsewhere.value) == "Unknown tool: other_echo"  # not this server's prefix
