"""The gateway's own answer to a 2026-07-28 ``tools/call`` on stdio (:mod:`gateway.stdio_fastcall`).

What must hold: the direct answer is the one the SDK's server gives for the same request (checked on a real
``gateway serve`` subprocess spoken to in raw lines, each request sent once as is and once with a progress token,
which the direct path leaves to the SDK); only such calls on a 2026-07-28 connection are taken, everything else
reaches the SDK (checked on the real exchange and runtime in-process); a cancelled call is cancelled and not
answered, here and, for a remote tool, upstream.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from gateway import mcp_adapter
from gateway.app import running_runtime
from gateway.stdio_fastcall import FastStdioCalls
from tests.gateway.feature_pack import FeaturePlugin, feature_config
from tests.gateway.http_support import INITIALIZE
from tests.gateway.stdio_support import StdioPeer
from tests.plugins.remote.support import py_stdio_server, remote_config, wait_until, write_toml

pytestmark = pytest.mark.anyio

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _request(request_id: int, method: str, params: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**(params or {}), "_meta": ENVELOPE | meta},
    }


def _call(request_id: int, name: str, arguments: Any, **meta: Any) -> dict[str, Any]:
    return _request(request_id, "tools/call", {"name": name, "arguments": arguments}, **meta)


def _line(message: dict[str, Any]) -> str:
    return json.dumps(message) + "\n"


def _receive(peer: StdioPeer, request_id: int) -> dict[str, Any]:
    """The answer to ``request_id`` (notifications before it skipped)."""
    while "id" not in (message := peer.receive()) or message["id"] != request_id:
        pass
    return {k: v for k, v in message.items() if k != "id"}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("hello_greet", {"name": "Ada"}),
        ("hello_greet", {"name": 5}),  # refused by the tool's schema: a tool error result
        ("hello_nothing", {}),  # not a tool: a JSON-RPC error
    ],
)
def test_direct_answer_is_the_sdks(tmp_path: Path, name: str, arguments: Any) -> None:
    config = tmp_path / "hello.toml"
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[packs]\nenabled = ["hello"]\n')
    peer = StdioPeer(config)
    try:
        peer.send(_request(1, "tools/list"))  # the first request opens a 2026-07-28 connection
        assert "hello_greet" in {t["name"] for t in _receive(peer, 1)["result"]["tools"]}
        peer.send(_call(2, name, arguments))
        direct = _receive(peer, 2)
        peer.send(_call(3, name, arguments, progressToken="p"))
        through_sdk = _receive(peer, 3)
    finally:
        peer.stop(signal.SIGTERM)
    assert direct == through_sdk


def test_a_result_past_64_bit_integers_is_answered_and_the_server_keeps_serving(tmp_path: Path) -> None:
    """``sequentialthinking`` echoes ``thoughtNumber``: 2**64 once ended the whole stdio server (orjson's limit)."""
    config = tmp_path / "thinking.toml"
    config.write_text(f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[packs]\nenabled = ["thinking"]\n')
    peer = StdioPeer(config)
    thought = {"thought": "t", "nextThoughtNeeded": True, "thoughtNumber": 2**64, "totalThoughts": 1}
    try:
        peer.send(_request(0, "tools/list"))  # the first request opens a 2026-07-28 connection
        _receive(peer, 0)
        peer.send(_call(1, "sequentialthinking", thought))
        direct = _receive(peer, 1)
        peer.send(_call(2, "sequentialthinking", thought, progressToken="p"))
        through_sdk = _receive(peer, 2)
        peer.send(_call(3, "sequentialthinking", {**thought, "thoughtNumber": 3}))
        after = _receive(peer, 3)
    finally:
        peer.stop(signal.SIGTERM)
    for answer, length in ((direct, 1), (through_sdk, 2)):  # each call adds to the history
        assert answer["result"]["structuredContent"]["thoughtNumber"] == 2**64
        assert answer["result"]["structuredContent"]["thoughtHistoryLength"] == length
    assert direct["result"].keys() == through_sdk["result"].keys()
    assert after["result"]["structuredContent"]["thoughtNumber"] == 3


class _Lines:
    """A :class:`gateway.stdio_pipes.LineSink` keeping what is written."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    async def write(self, text: str) -> None:
        self.lines.append(json.loads(text))

    async def flush(self) -> None:
        return None


@asynccontextmanager
async def _fast(tmp_path: Path) -> AsyncIterator[tuple[FastStdioCalls, _Lines, FeaturePlugin]]:
    plugin = FeaturePlugin()
    async with running_runtime(feature_config(tmp_path), extra_plugins=[("feat", plugin)], configure_logs=False) as rt:
        exchange = mcp_adapter.ModernCallExchange(mcp_adapter.build_server(rt), rt, json_response=True)
        sink = _Lines()
        async with anyio.create_task_group() as tg:
            yield FastStdioCalls(rt, exchange, sink, tg), sink, plugin
            tg.cancel_scope.cancel()


async def test_only_plain_calls_on_a_modern_connection_are_taken(tmp_path: Path):
    async with _fast(tmp_path) as (fast, sink, _):
        assert not fast.take("not json\n")  # answered by the line checks, decides nothing
        assert not fast.take(_line(_request(1, "tools/list")))  # the SDK opens the 2026-07-28 connection
        assert fast.take(_line(_call(2, "feat_double", {"n": 21})))
        refused = [
            _call(3, "feat_double", {"n": 1}, progressToken="p"),  # progress: the SDK's
            _call(4, "feat_double", {"n": 1}, **{"io.modelcontextprotocol/logLevel": "info"}),  # log messages
            {**_call(5, "feat_double", {"n": 1}), "jsonrpc": "1.0"},  # not JSON-RPC 2.0: the line checks answer
            _call(6, 42, {}),  # a name that is not a string: the SDK's invalid-params error
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "feat_double"}},  # no envelope
            _request(8, "resources/list"),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}},  # not ours
        ]
        assert [fast.take(_line(message)) for message in refused] == [False] * len(refused)
        with anyio.fail_after(10):
            while not sink.lines:
                await anyio.sleep(0.01)
    assert sink.lines == [
        {
            "jsonrpc": "2.0",
            "id": 2,
            "result": {
                "content": [{"type": "text", "text": '{"doubled": 42}'}],
                "structuredContent": {"doubled": 42},
                "isError": False,
                "resultType": "complete",
                "_meta": sink.lines[0]["result"]["_meta"],
            },
        }
    ]
    assert "io.modelcontextprotocol/serverInfo" in sink.lines[0]["result"]["_meta"]


async def test_a_handshake_era_connection_is_left_to_the_sdk(tmp_path: Path):
    async with _fast(tmp_path) as (fast, sink, _):
        assert not fast.take(_line(INITIALIZE))
        assert not fast.take(_line(_call(2, "feat_double", {"n": 21})))  # the SDK refuses an envelope here
        await anyio.sleep(0.1)
    assert sink.lines == []


async def test_a_cancelled_call_is_cancelled_and_not_answered(tmp_path: Path):
    async with _fast(tmp_path) as (fast, sink, plugin):
        fast.take(_line(_request(1, "tools/list")))
        assert fast.take(_line(_call(2, "feat_work", {"steps": 1, "seconds": 30})))
        await anyio.sleep(0.2)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "2"}}  # "2" is 2
        assert not fast.take(_line(cancel))  # the SDK reads the notice too: it ignores ids it is not running
        assert fast.take(_line(_call(3, "feat_double", {"n": 1})))
        with anyio.fail_after(10):
            while not sink.lines:
                await anyio.sleep(0.01)
        await anyio.sleep(0.1)
    assert [line["id"] for line in sink.lines] == [3]
    assert plugin.pack is not None and len(plugin.pack.cancelled) == 1


async def test_calls_past_the_running_limit_wait_their_turn_and_can_be_cancelled_while_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A client that sends calls faster than it reads answers: at most MAX_RUNNING run (and hold answers) at once;
    the others wait, stdin is still read, and a call cancelled while it waits is never run nor answered."""
    from gateway import stdio_fastcall

    monkeypatch.setattr(stdio_fastcall, "MAX_RUNNING", 2)
    async with _fast(tmp_path) as (fast, sink, plugin):
        fast.take(_line(_request(1, "tools/list")))
        for request_id in (2, 3, 4, 5):
            assert fast.take(_line(_call(request_id, "feat_work", {"steps": 1, "seconds": 0.5})))
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}
        assert not fast.take(_line(cancel))
        await anyio.sleep(0.3)
        assert not sink.lines  # two running, two waiting
        with anyio.fail_after(10):
            while len(sink.lines) < 3:
                await anyio.sleep(0.01)
        await anyio.sleep(0.7)
    assert sorted(line["id"] for line in sink.lines) == [2, 3, 4]  # 5 was cancelled while it waited
    assert plugin.pack is not None and plugin.pack.cancelled == []  # it never ran


async def test_lines_the_sdk_reads_otherwise_are_left_to_it(tmp_path: Path):
    async with _fast(tmp_path) as (fast, sink, plugin):
        fast.take(_line(_request(1, "tools/list")))
        assert fast.take(_line(_call(2, "feat_work", {"steps": 1, "seconds": 30})))
        left = [
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": [2]}},  # not an id
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": True}},  # True is not 2
            {"jsonrpc": "2.0", "id": 77, "method": "notifications/cancelled", "params": {"requestId": 2}},  # a request
            {"method": "notifications/cancelled", "params": {"requestId": 2}},  # not JSON-RPC 2.0
            {**_call(3, "feat_double", {"n": 1}), "id": [3]},  # an id that is not one
            {**_call(4, "feat_double", {"n": 1}), "error": {"code": 1, "message": "x"}},  # read as an error response
            _call(2, "feat_double", {"n": 1}),  # an id already running here
        ]
        assert [fast.take(_line(message)) for message in left] == [False] * len(left)
        await anyio.sleep(0.2)
        assert plugin.pack is not None and plugin.pack.cancelled == []  # call 2 still runs
        fast.close()
        with anyio.fail_after(10):
            while not sink.lines:
                await anyio.sleep(0.01)
    assert sink.lines == [{"jsonrpc": "2.0", "id": 2, "error": {"code": -32000, "message": "Connection closed"}}]


async def test_the_era_is_read_as_the_sdk_reads_the_first_request(tmp_path: Path):
    async with _fast(tmp_path) as (fast, sink, _):
        huge = '{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"x": 1e400}}}\n'
        assert not fast.take(huge)  # a number JSON parsers disagree on: read as the SDK reads it, a handshake
        assert not fast.take(_line(_call(2, "feat_double", {"n": 21})))
    assert sink.lines == []


def _answers_after_stdin_closes(peer: StdioPeer) -> dict[Any, dict[str, Any]]:
    assert peer.process.stdin is not None and peer.process.stdout is not None
    peer.process.stdin.close()
    answers = {}
    try:
        for line in peer.process.stdout:  # until the gateway closes stdout
            message = json.loads(line)
            if "id" in message:
                answers[message.pop("id")] = message
    finally:
        peer.process.wait(30)
    return answers


@pytest.mark.slow
def test_calls_running_when_stdin_closes_are_answered_within_the_grace(tmp_path: Path) -> None:
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [py_stdio_server(tmp_path / "state")]))
    peer = StdioPeer(config)
    peer.send(_request(1, "tools/list"))
    _receive(peer, 1)
    peer.send(_call(2, "py_slow", {"seconds": 1.5, "steps": 1}))  # the direct path
    peer.send(_call(3, "py_slow", {"seconds": 1.5, "steps": 1}, progressToken="p"))  # the SDK's
    answers = _answers_after_stdin_closes(peer)
    done = {"result": "done after 1 steps"}
    assert answers[2]["result"]["structuredContent"] == answers[3]["result"]["structuredContent"] == done


@pytest.mark.slow
def test_calls_still_running_when_the_grace_ends_are_answered_as_the_sdk_answers(tmp_path: Path) -> None:
    servers = [py_stdio_server(tmp_path / "state")]
    config = write_toml(
        tmp_path / "gateway.toml", remote_config(tmp_path, servers, transport={"shutdown_grace_seconds": 0.5})
    )
    peer = StdioPeer(config)
    peer.send(_request(1, "tools/list"))
    _receive(peer, 1)
    peer.send(_call(2, "py_slow", {"seconds": 30, "steps": 2}))  # the direct path
    peer.send(_call(3, "py_slow", {"seconds": 30, "steps": 2}, progressToken="p"))  # the SDK's
    time.sleep(1.0)
    answers = _answers_after_stdin_closes(peer)
    assert answers[2] == answers[3] == {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Connection closed"}}


@pytest.mark.slow
def test_a_cancelled_remote_call_is_cancelled_upstream(tmp_path: Path) -> None:
    """Both direct paths at once: a stdio client's call taken by the gateway, forwarded to a stdio upstream."""
    state = tmp_path / "state"
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [py_stdio_server(state)]))
    peer = StdioPeer(config)
    try:
        peer.send(_request(1, "tools/list"))
        assert "py_slow" in {t["name"] for t in _receive(peer, 1)["result"]["tools"]}
        peer.send(_call(2, "py_slow", {"seconds": 30, "steps": 2}))
        assert wait_until(lambda: any(state.glob("started-*"))), "the call did not reach the upstream"
        peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}})
        assert wait_until(lambda: any(state.glob("cancelled-*"))), "the upstream was not told to stop"
        peer.send(_call(3, "py_echo", {"text": "after"}))
        answer = peer.receive()  # nothing for the cancelled call comes first
    finally:
        peer.stop(signal.SIGTERM)
    assert answer["id"] == 3 and answer["result"]["structuredContent"] == {"result": "after"}


@pytest.mark.slow
def test_a_remote_server_killed_mid_call_is_a_structured_error_then_restarts(tmp_path: Path) -> None:
    state = tmp_path / "state"
    server = py_stdio_server(state, restart_backoff_seconds=0.2)
    config = write_toml(tmp_path / "gateway.toml", remote_config(tmp_path, [server]))
    peer = StdioPeer(config)
    try:
        peer.send(_call(1, "py_pid", {}))  # opens a 2026-07-28 connection (the SDK answers this one)
        first = int(_receive(peer, 1)["result"]["structuredContent"]["result"])
        peer.send(_call(2, "py_pid", {}))
        assert int(_receive(peer, 2)["result"]["structuredContent"]["result"]) == first
        peer.send(_call(3, "py_slow", {"seconds": 30, "steps": 2}))
        time.sleep(1.0)
        os.kill(first, signal.SIGKILL)
        killed = _receive(peer, 3)["result"]
        peer.send(_call(4, "py_pid", {}))
        after = int(_receive(peer, 4)["result"]["structuredContent"]["result"])
    finally:
        peer.stop(signal.SIGTERM)
    error = json.loads(killed["content"][0]["text"])["error"]
    assert killed["isError"] and error["code"] == "upstream_unavailable" and error["details"]["upstream"] == "py"
    assert after != first  # a new server process answered
