"""The life of stdio upstreams: lazy or eager start, restart after a crash, idle reaping, timeouts, concurrency
limits, a server that is down, and no process left behind, even when the gateway is killed with SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from gateway.api import ConfigError
from gateway.testing import running_gateway
from tests.plugins.remote.support import (
    PY_SERVER,
    alive,
    descendants,
    eventually,
    everything_server,
    kill,
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


def _py_servers() -> list[int]:
    return servers_under(ME, str(PY_SERVER))


async def test_lazy_server_starts_on_first_use_and_is_reaped_when_idle(tmp_path: Path):
    state = tmp_path / "state"
    config = remote_config(tmp_path, [py_stdio_server(state, idle_timeout_seconds=1.0)])
    async with running_gateway(config):  # the first run reads the catalogue (and keeps a copy)
        pass
    assert await eventually(lambda: not _py_servers())
    async with running_gateway(config) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        tools = {t.name for t in (await client.list_tools()).tools}
        before = (upstream.state, _py_servers())
        first = await client.call_tool("py_echo", {"text": "hi"})
        running = _py_servers()
        reaped = await eventually(lambda: upstream.state == "idle" and not _py_servers())
        again = await client.call_tool("py_echo", {"text": "again"})
        starts = upstream.starts
    assert {"py_echo", "py_slow"} <= tools  # listed from the copy, before the server ever ran here
    assert before == ("idle", [])
    assert first.structured_content == {"result": "hi"} and len(running) == 1
    assert reaped, "the idle server was not stopped"
    assert again.structured_content == {"result": "again"} and starts == 2


async def test_eager_server_starts_with_the_gateway(tmp_path: Path):
    config = remote_config(tmp_path, [py_stdio_server(tmp_path / "state", start="eager")])
    async with running_gateway(config):
        pass
    async with running_gateway(config) as client:
        assert client.runtime.packs["remote"].upstreams[0].state == "up"
        assert len(_py_servers()) == 1
    assert await eventually(lambda: not _py_servers()), "a server outlived the gateway"


async def test_a_crash_mid_call_is_an_upstream_error_and_the_server_restarts(tmp_path: Path, node: str):
    config = remote_config(tmp_path, [everything_server(node, restart_backoff_seconds=0.2)])
    async with running_gateway(config) as client:
        results: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def long_call() -> None:
                results.append(
                    await client.call_tool("ev_trigger-long-running-operation", {"duration": 30, "steps": 30})
                )

            tg.start_soon(long_call)
            assert await eventually(lambda: len(servers_under(ME, "server-everything")) == 1)
            await anyio.sleep(0.3)
            victim = servers_under(ME, "server-everything")[0]
            kill(victim)
        after = await client.call_tool("ev_echo", {"message": "back"})
        upstream = client.runtime.packs["remote"].upstreams[0]
        status = upstream.status(0)
    error = _error(results[0])
    assert error["code"] == "upstream_unavailable" and error["details"]["upstream"] == "everything"
    assert after.content[0].text == "Echo: back"
    assert upstream.starts == 2 and status.state == "up" and status.last_error  # the crash is remembered


async def test_call_timeout_cancels_the_call_upstream(tmp_path: Path):
    state = tmp_path / "state"
    config = remote_config(tmp_path, [py_stdio_server(state, call_timeout_seconds=1.0)])
    async with running_gateway(config) as client:
        result = await client.call_tool("py_slow", {"seconds": 30, "steps": 2})
        marked = await eventually(lambda: any(state.glob("cancelled-*")))
        fine = await client.call_tool("py_echo", {"text": "ok"})
    error = _error(result)
    assert error["code"] == "upstream_timeout" and error["details"] == {
        "upstream": "py",
        "timeout_seconds": 1.0,
        "queued": False,
    }
    assert marked, "the server was not told to stop"
    assert fine.structured_content == {"result": "ok"}


async def test_concurrency_limit(tmp_path: Path):
    config = remote_config(tmp_path, [py_stdio_server(tmp_path / "state", max_concurrency=2)])
    async with running_gateway(config) as client:
        answers: list[Any] = []
        async with anyio.create_task_group() as tg:
            for _ in range(5):

                async def one() -> None:
                    answers.append(await client.call_tool("py_overlap", {"seconds": 0.3}))

                tg.start_soon(one)
    assert len(answers) == 5
    assert max(a.structured_content["result"] for a in answers) == 2


async def test_calls_queued_past_the_timeout_fail_as_queued(tmp_path: Path):
    """Two calls for one slot, with the same timeout: the first times out running; the second, waiting since a moment
    later, times out still queued unless the freed slot reaches it within that moment (the first call's clean-up and
    the gap between the two arrivals race). So the rounds repeat until one shows a queued call; each must show one
    call timed out running and only timeouts."""
    config = remote_config(tmp_path, [py_stdio_server(tmp_path / "state", max_concurrency=1, call_timeout_seconds=0.8)])
    seen: list[list[tuple[str, bool]]] = []
    async with running_gateway(config) as client:
        for _ in range(5):
            answers: list[Any] = []
            async with anyio.create_task_group() as tg:
                for _ in range(2):

                    async def one(answers: list[Any] = answers) -> None:
                        answers.append(await client.call_tool("py_slow", {"seconds": 5, "steps": 1}))

                    tg.start_soon(one)
            details = sorted((_error(a)["code"], _error(a)["details"]["queued"]) for a in answers)
            seen.append(details)
            assert {code for code, _ in details} == {"upstream_timeout"} and details[0][1] is False, details
            if details[1][1]:
                break
    assert seen[-1] == [("upstream_timeout", False), ("upstream_timeout", True)], seen


async def test_a_down_server_does_not_stop_the_others(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    servers = [
        py_stdio_server(tmp_path / "state"),
        {"name": "ghost", "command": [str(tmp_path / "missing-binary")], "prefix": "ghost_"},
        {"name": "search", "url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": {"env": "NO_SUCH_TOKEN"}}},
        {"name": "closed", "url": "http://127.0.0.1:9/mcp", "prefix": "closed_", "connect_timeout_seconds": 2},
    ]
    async with running_gateway(remote_config(tmp_path, servers)) as client:
        fine = await client.call_tool("py_echo", {"text": "fine"})
        statuses = {s.name: s for _, s in client.runtime.upstream_statuses()}
    assert fine.structured_content == {"result": "fine"}
    assert statuses["py"].state == "up"
    # the others keep being retried in the background: "starting" while an attempt runs, "down" between them
    for name, why in (("ghost", "missing-binary"), ("search", "NO_SUCH_TOKEN"), ("closed", "closed")):
        assert statuses[name].state in ("down", "starting") and why in (statuses[name].last_error or ""), name


async def test_a_known_but_down_server_answers_upstream_unavailable_at_once(tmp_path: Path):
    """Its tools stay listed (from the catalogue copy) and calls fail fast, naming it and why, never hang."""
    server = py_stdio_server(tmp_path / "state", restart_backoff_seconds=30, call_timeout_seconds=5)
    async with running_gateway(remote_config(tmp_path, [server])):
        pass
    failing = {**server, "env": {"PY_SERVER_FAIL": "1"}}  # same command: the copy still applies
    async with running_gateway(remote_config(tmp_path, [failing])) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
        first = _error(await client.call_tool("py_echo", {"text": "x"}))
        second = _error(await client.call_tool("py_echo", {"text": "x"}))
    assert "py_echo" in listed
    assert first["code"] == "upstream_unavailable" and first["details"]["upstream"] == "py"
    assert "told to fail" in first["message"]  # the server's own last words, from its stderr
    assert second["code"] == "upstream_unavailable" and second["details"]["retry_after"] > 0


async def test_a_call_does_not_wait_out_a_long_backoff(tmp_path: Path):
    """A restart due within two seconds is waited for; one due later fails the call at once, saying when to retry,
    however long the call timeout (60 s here), and without taking one of the server's call slots meanwhile."""
    server = py_stdio_server(tmp_path / "state", restart_backoff_seconds=6, max_concurrency=1)
    async with running_gateway(remote_config(tmp_path, [server])):
        pass
    failing = {**server, "env": {"PY_SERVER_FAIL": "1"}}
    async with running_gateway(remote_config(tmp_path, [failing])) as client:
        _error(await client.call_tool("py_echo", {"text": "x"}))  # starts it: it fails, the next try in 6 s
        started = anyio.current_time()
        async with anyio.create_task_group() as tg:
            errors: list[dict[str, Any]] = []

            async def call() -> None:
                errors.append(_error(await client.call_tool("py_echo", {"text": "x"})))

            for _ in range(3):
                tg.start_soon(call)
        took = anyio.current_time() - started
    assert took < 2, f"the calls took {took:.1f} s"
    for error in errors:
        assert error["code"] == "upstream_unavailable" and 3 < error["details"]["retry_after"] <= 6, error


async def test_a_server_that_never_answers_initialize_is_down_at_the_connect_timeout_and_retried(tmp_path: Path):
    server = {
        **py_stdio_server(tmp_path / "state", connect_timeout_seconds=2, restart_backoff_seconds=0.2),
        "env": {"PY_SERVER_HANG_ONCE": "1"},
    }
    async with running_gateway(remote_config(tmp_path, [server])) as client:
        upstream = client.runtime.packs["remote"].upstreams[0]
        came_up = await eventually(lambda: upstream.state == "up")  # the first start hangs: a first run, no copy
        result = await client.call_tool("py_echo", {"text": "at last"})
        starts, reason = upstream.starts, upstream.last_error
        started = anyio.current_time()
    stopped_in = anyio.current_time() - started
    assert came_up and result.structured_content == {"result": "at last"}
    assert starts == 2 and "no answer within 2 s" in (reason or "")
    assert stopped_in < 5 and await eventually(lambda: not _py_servers())


async def test_a_rate_limit_rule_naming_a_remote_tool_does_not_stop_a_start_while_its_server_is_down(tmp_path: Path):
    """Its tools are not known yet (a first run: no catalogue copy); the rule waits for them."""
    server = {**py_stdio_server(tmp_path / "state", restart_backoff_seconds=30), "env": {"PY_SERVER_FAIL": "1"}}
    rule = {"name": "echo", "tools": ["py_echo"], "kind": "token_bucket", "limit": 5, "period_seconds": 60}
    config = remote_config(
        tmp_path,
        [server],
        pipeline={"interceptors": [{"name": "rate_limit"}]},
        plugins={"interceptor": {"rate_limit": {"rules": [rule]}}},
    )
    async with running_gateway(config) as client:
        state = client.runtime.packs["remote"].upstreams[0].state
        tools = [t.name for t in (await client.list_tools()).tools]
    assert state in ("down", "starting") and tools == []
    typo = {**rule, "tools": ["pyecho"]}  # no server's prefix: no server may offer it, a typo still fails loudly
    config["plugins"]["interceptor"]["rate_limit"]["rules"] = [typo]
    with pytest.raises(ConfigError, match="unknown tool"):
        async with running_gateway(config):
            pass


def test_no_orphans_when_the_gateway_is_killed(tmp_path: Path, node: str):
    """SIGKILL leaves the gateway no chance to clean up: its servers, and their own children, still go."""
    wrapped = ["/bin/sh", "-c", f'"{sys.executable}" "{PY_SERVER}" stdio "{tmp_path / "state"}"; true']
    servers = [
        {"name": "py", "command": wrapped, "prefix": "py_", "start": "eager"},
        everything_server(node, start="eager"),
    ]
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, servers))
    gateway = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_until(
            lambda: servers_under(gateway.pid, str(PY_SERVER)) and servers_under(gateway.pid, "server-everything"),
            timeout=60,
        ), "the servers did not start"
        tree = descendants(gateway.pid)
        assert len(tree) >= 5  # two launchers, sh, its python, node
        gateway.send_signal(signal.SIGKILL)
        gateway.wait(10)
        assert wait_until(lambda: not any(alive(pid) for pid in tree), timeout=15), [pid for pid in tree if alive(pid)]
    finally:
        for pid in descendants(gateway.pid):
            kill(pid)
        if gateway.poll() is None:
            gateway.kill()


async def test_no_process_left_after_a_clean_stop(tmp_path: Path, node: str):
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [everything_server(node, start="eager")]))
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)], env=dict(os.environ)
    )
    async with Client(params) as client:
        assert (await client.call_tool("ev_echo", {"message": "x"})).content[0].text == "Echo: x"
        running = servers_under(ME, "server-everything")
    assert len(running) == 1
    assert await eventually(lambda: not alive(running[0])), "the server outlived its gateway"
