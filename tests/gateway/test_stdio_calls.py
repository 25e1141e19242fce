"""The direct ``tools/call`` exchange with a stdio upstream (:mod:`gateway.mcp_adapter.stdio_calls`), against a real
server built with the Python SDK (``tests/plugins/remote/servers/py_server.py``), through the session the remote
pack uses. A call without a progress sink takes the direct path; the same call with one goes through the SDK's
client, so each check compares the two."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest

from gateway.api.upstream import StdioTarget, UpstreamConnectionLost, UpstreamRequestFailed
from gateway.mcp_adapter import SdkWire
from gateway.mcp_adapter.sdk import SessionMessage, mt
from gateway.mcp_adapter.stdio_calls import ID_PREFIX, StdioCalls
from gateway.upstream_session import WireConnector, WireSession
from tests.plugins.remote.support import PY_SERVER, eventually

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def _no_progress_wanted(progress: float, total: float | None, message: str | None) -> None:
    return None


@asynccontextmanager
async def _session(state: Path) -> AsyncIterator[WireSession]:
    state.mkdir(exist_ok=True)
    target = StdioTarget(command=(sys.executable, str(PY_SERVER), "stdio", str(state)))
    session = await WireConnector(SdkWire).connect("py", target, connect_timeout=60)
    try:
        yield session
    finally:
        await session.aclose()


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("add", {"a": 2, "b": 40}),  # structured content
        ("echo", {"text": "hello"}),
        ("add", {"a": "two", "b": 40}),  # refused by the server's argument check: a tool error result
    ],
)
async def test_direct_call_answers_as_the_sdks_client(tmp_path: Path, name: str, arguments: dict[str, object]):
    async with _session(tmp_path / "state") as session:
        assert session.protocol_version == "2026-07-28"  # the envelope travels with each direct request
        direct = await session.call_tool(name, arguments)
        through_sdk = await session.call_tool(name, arguments, progress=_no_progress_wanted)
    assert direct == through_sdk


async def _slow_call(session: WireSession, errors: list[Exception]) -> None:
    """A long call; its connection-lost error, if it ends so, goes to ``errors``."""
    try:
        await session.call_tool("slow", {"seconds": 30, "steps": 2})
    except UpstreamConnectionLost as exc:
        errors.append(exc)


async def test_calls_without_progress_take_the_direct_path(tmp_path: Path):
    state = tmp_path / "state"
    async with _session(state) as session:
        await session.call_tool("whoami", {})
        await session.call_tool("whoami", {}, progress=_no_progress_wanted)
    direct, through_sdk = (json.loads((state / f"request-{n}.json").read_text()) for n in (1, 2))
    assert direct.startswith(ID_PREFIX) and through_sdk.isdigit()  # the SDK's client numbers its requests


async def test_a_call_waiting_when_the_session_closes_fails_at_once(tmp_path: Path):
    async with _session(tmp_path / "state") as session:
        errors: list[Exception] = []

        with anyio.fail_after(15):  # a guard against a hang: the process is stopped within a few seconds
            async with anyio.create_task_group() as tg:
                tg.start_soon(_slow_call, session, errors)
                await anyio.sleep(0.5)
                await session.aclose()
    assert len(errors) == 1


async def test_an_unknown_tool_is_the_servers_answer(tmp_path: Path):
    async with _session(tmp_path / "state") as session:
        direct = await session.call_tool("nothing", {})
        through_sdk = await session.call_tool("nothing", {}, progress=_no_progress_wanted)
    assert direct == through_sdk and direct.is_error  # this server reports it as a tool error


async def test_concurrent_calls_get_their_own_answers(tmp_path: Path):
    async with _session(tmp_path / "state") as session:
        answers: dict[int, object] = {}

        async def call(n: int) -> None:
            answers[n] = (await session.call_tool("echo", {"text": f"text {n}"})).structured

        async with anyio.create_task_group() as tg:
            for n in range(20):
                tg.start_soon(call, n)
    assert answers == {n: {"result": f"text {n}"} for n in range(20)}


async def test_an_abandoned_call_is_cancelled_upstream_and_its_late_answer_dropped(tmp_path: Path):
    state = tmp_path / "state"
    async with _session(state) as session:
        async with anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "slow", {"seconds": 30, "steps": 2})
            assert await eventually(lambda: any(state.glob("started-*"))), "the call did not reach the server"
            tg.cancel_scope.cancel()
        assert await eventually(lambda: any(state.glob("cancelled-*"))), "the server was not told to stop"
        # A late answer to an abandoned request would reach nobody: the session goes on
        assert (await session.call_tool("echo", {"text": "after"})).structured == {"result": "after"}
        tools = await session.list_tools()
    assert "echo" in {t.name for t in tools}


async def test_a_server_killed_mid_call_ends_the_call_with_connection_lost(tmp_path: Path):
    async with _session(tmp_path / "state") as session:
        pid = int((await session.call_tool("pid", {})).structured["result"])
        errors: list[Exception] = []

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(_slow_call, session, errors)
                await anyio.sleep(0.5)
                os.kill(pid, signal.SIGKILL)
        assert session.closed
    assert [str(e) for e in errors] == ["the connection ended"]


def _answer(request_id: str | int, text: str) -> SessionMessage:
    return SessionMessage(mt.JSONRPCResponse(jsonrpc="2.0", id=request_id, result={"content": [], "text": text}))


async def test_claim_takes_only_answers_to_direct_requests():
    send, receive = anyio.create_memory_object_stream[SessionMessage](1)
    calls = StdioCalls(send)
    async with send, receive:
        async with anyio.create_task_group() as tg:
            result: dict[str, object] = {}

            async def call() -> None:
                result.update(await calls.call_tool("echo", {"text": "x"}))

            tg.start_soon(call)
            request = (await receive.receive()).message
            assert isinstance(request, mt.JSONRPCRequest) and str(request.id).startswith(ID_PREFIX)
            assert request.params == {"name": "echo", "arguments": {"text": "x"}}  # the handshake era: no envelope
            assert not calls.claim(_answer(7, "the SDK's own request"))  # integer ids are the SDK client's
            assert not calls.claim(SessionMessage(mt.JSONRPCNotification(jsonrpc="2.0", method="notifications/x")))
            assert calls.claim(_answer(f"{ID_PREFIX}999", "an abandoned call's late answer"))  # dropped
            assert calls.claim(_answer(request.id, "mine"))
        assert result == {"content": [], "text": "mine"}
        calls.use_envelope({"io.modelcontextprotocol/protocolVersion": "2026-07-28"})
        async with anyio.create_task_group() as tg:

            async def refused() -> None:
                with pytest.raises(UpstreamRequestFailed) as failure:
                    await calls.call_tool("echo", {})
                assert (failure.value.code, failure.value.message, failure.value.data) == (-32602, "bad", {"k": 1})

            tg.start_soon(refused)
            request = (await receive.receive()).message
            assert isinstance(request, mt.JSONRPCRequest) and request.params is not None
            assert request.params["_meta"] == {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}
            error = mt.ErrorData(code=-32602, message="bad", data={"k": 1})
            assert calls.claim(SessionMessage(mt.JSONRPCError(jsonrpc="2.0", id=request.id, error=error)))
        calls.end()
        with pytest.raises(UpstreamConnectionLost):
            await calls.call_tool("echo", {"text": "after the end"})
