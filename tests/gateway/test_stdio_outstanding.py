"""What the end of stdin waits for (:mod:`gateway.mcp_adapter.stdio_outstanding`): the requests read and not
answered, their ids correlated as the SDK's server correlates them."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from gateway.mcp_adapter import CheckedLines
from gateway.mcp_adapter.sdk import SessionMessage, mt
from gateway.mcp_adapter.stdio_outstanding import Outstanding

pytestmark = pytest.mark.anyio


def _request(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def _cancel(request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}


async def test_a_request_leaves_when_answered_or_cancelled_under_either_spelling_of_its_id() -> None:
    outstanding = Outstanding()
    for request_id in (3, "4", "x"):
        outstanding.read(_request(request_id))
    outstanding.read({"jsonrpc": "2.0", "id": 3, "result": {}})  # the client answering the server: no request
    assert len(outstanding) == 3
    outstanding.read(_cancel("3"))  # the SDK cancels request 3 and answers nothing
    outstanding.read(_cancel(True))  # not an id (True is not 1): nothing is cancelled
    outstanding.answered(mt.JSONRPCResponse(jsonrpc="2.0", id=4, result={}))
    assert len(outstanding) == 1
    with anyio.move_on_after(0.2) as waiting:
        await outstanding.settled()
    assert waiting.cancelled_caught  # "x" is still unanswered
    outstanding.answered(mt.JSONRPCError(jsonrpc="2.0", id="x", error=mt.ErrorData(code=-1, message="m")))
    with anyio.fail_after(5):
        await outstanding.settled()


async def test_a_refusal_reusing_the_id_of_a_running_request_does_not_answer_it() -> None:
    lines = ['{"jsonrpc": "2.0", "id": 2, "method": "ping"}\n', '{"jsonrpc": "2.0", "id": 2, "method": 7}\n']
    checked = CheckedLines(_lines(lines), grace_seconds=0.3)
    send, receive = anyio.create_memory_object_stream[SessionMessage](10)
    checked.answer_through(send)
    assert await anext(checked) == lines[0]
    started = anyio.current_time()
    with pytest.raises(StopAsyncIteration):
        await anext(checked)  # the refusal goes out; then the end waits for request 2, to the grace
    assert anyio.current_time() - started >= 0.3
    refusal = receive.receive_nowait().message
    assert isinstance(refusal, mt.JSONRPCError) and refusal.id == 2 and refusal.error.code == mt.INVALID_REQUEST


async def _lines(lines: list[str]) -> Any:
    for line in lines:
        yield line
