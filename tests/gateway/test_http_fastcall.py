"""The gateway's own answer to a 2026-07-28 ``tools/call`` over HTTP (:mod:`gateway.http_fastcall`).

Two things must hold: the direct answer is the one the SDK's entry gives for the same request (checked over real
HTTP, by sending each request once as is and once with a progress token, which the direct path leaves to the SDK),
and everything the direct path must not answer reaches the SDK's app (checked with the real exchange in front of
an app that records what reaches it).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from gateway import mcp_adapter
from gateway.http_fastcall import FastToolCalls
from gateway.testing import http_gateway, running_runtime
from tests.gateway.feature_pack import FeaturePlugin, feature_config

pytestmark = pytest.mark.anyio

VERSION = "2026-07-28"
_ids = itertools.count(1)


def _request(name: str, arguments: Any, *, meta: dict[str, Any] | None = None) -> tuple[dict[str, str], bytes]:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        **(meta or {}),
    }
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": envelope},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": name,
    }
    return headers, json.dumps(body).encode()


def _without_id(answer: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in answer.items() if k != "id"}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("feat_double", {"n": 21}),  # a structured result
        ("feat_double", {"n": -1, "extra": True}),  # refused by the tool's schema: a tool error result
        ("feat_double", {"n": 2**64}),  # a result past orjson's 64-bit integers (JSON has no such limit)
        ("feat_picture", {}),  # content blocks passed through
        ("feat_nothing", {}),  # not a tool: a JSON-RPC error
        ("feat_work", {"steps": "many"}),  # pydantic input model refuses
    ],
)
def test_direct_answer_is_the_sdks(tmp_path: Path, name: str, arguments: Any) -> None:
    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", FeaturePlugin())]) as (base, _):
        with httpx.Client(base_url=base) as http:
            headers, body = _request(name, arguments)
            direct = http.post("/mcp", content=body, headers=headers)
            headers, body = _request(name, arguments, meta={"progressToken": "p1"})
            sdk = http.post("/mcp", content=body, headers=headers)
    assert direct.status_code == sdk.status_code
    assert direct.headers["content-type"] == sdk.headers["content-type"] == "application/json"
    assert _without_id(direct.json()) == _without_id(sdk.json())


class _Recorder:
    """Stands for the SDK's app: records what reaches it."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        message = await receive()
        self.seen.append(message.get("body", b""))
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def _front(runtime: Any, recorder: _Recorder, *, json_response: bool = False, ping_after: float = 15.0) -> Any:
    server = mcp_adapter.build_server(runtime)
    exchange = mcp_adapter.ModernCallExchange(server, runtime, json_response=json_response)
    fast = FastToolCalls(recorder, exchange, path="/mcp", modern=frozenset({VERSION}), ping_after=ping_after)

    async def with_principal(scope: Any, receive: Any, send: Any) -> None:  # what the security middleware sets
        scope.setdefault("state", {})["principal"] = runtime.default_principal
        await fast(scope, receive, send)

    return with_principal


async def test_what_the_direct_path_leaves_to_the_sdk(tmp_path: Path) -> None:
    recorder = _Recorder()
    async with running_runtime(feature_config(tmp_path), extra_plugins=[("feat", FeaturePlugin())]) as runtime:
        app = await _front(runtime, recorder)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            headers, body = _request("feat_double", {"n": 2})
            served = await http.post("/mcp", content=body, headers=headers)
            declined = []
            for change in (
                {"meta": {"progressToken": 7}},  # progress asked for
                {"meta": {"io.modelcontextprotocol/logLevel": "info"}},  # log messages asked for
                {"header": ("MCP-Protocol-Version", "2025-11-25")},  # the handshake era
                {"header": ("Mcp-Name", "feat_other")},  # a routing header that disagrees with the body
                {"header": ("Accept", "text/html")},  # an answer the client cannot read
                {"header": ("Content-Type", "text/plain")},
                {"repeat": "Mcp-Name"},  # a routing header sent twice
                {"body": b"{not json"},
                {"body": b'[{"jsonrpc": "2.0"}]'},  # a batch
            ):
                headers, body = _request("feat_double", {"n": 2}, meta=change.get("meta"))
                if "header" in change:
                    headers[change["header"][0]] = change["header"][1]
                sent = list(headers.items()) + ([("Mcp-Name", "feat_double")] if "repeat" in change else [])
                declined.append(await http.post("/mcp", content=change.get("body", body), headers=sent))
    assert served.status_code == 200 and served.json()["result"]["structuredContent"] == {"doubled": 4}
    assert [r.status_code for r in declined] == [299] * 9
    assert len(recorder.seen) == 9  # every declined request reached the SDK with its body intact
    assert recorder.seen[-2] == b"{not json"


async def test_a_long_call_becomes_an_event_stream_with_pings(tmp_path: Path) -> None:
    async with running_runtime(feature_config(tmp_path), extra_plugins=[("feat", FeaturePlugin())]) as runtime:
        streaming = await _front(runtime, _Recorder(), ping_after=0.1)
        json_only = await _front(runtime, _Recorder(), ping_after=0.1, json_response=True)  # transport.json_response
        answers = []
        for app in (streaming, json_only):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
                headers, body = _request("feat_work", {"steps": 1, "seconds": 0.35})
                answers.append(await http.post("/mcp", content=body, headers=headers))
    streamed, waited = answers
    assert streamed.headers["content-type"] == "text/event-stream"
    frames = streamed.text.split("\r\n\r\n")
    assert frames[0] == ": ping" and frames.count(": ping") >= 2
    answer = json.loads(frames[-2].removeprefix("event: message\r\ndata: "))
    assert answer["result"]["structuredContent"] == {"done": 1}
    assert waited.headers["content-type"] == "application/json"
    assert waited.json()["result"]["structuredContent"] == {"done": 1}


async def test_a_client_that_hangs_up_cancels_the_call(tmp_path: Path) -> None:
    plugin = FeaturePlugin()
    with http_gateway(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as (base, runtime):
        async with Client(f"{base}/mcp") as client:  # the 2026-07-28 era, no progress: the direct path
            with anyio.move_on_after(0.5):
                await client.call_tool("feat_work", {"steps": 100, "seconds": 1})
            for _ in range(200):
                if plugin.pack and plugin.pack.cancelled:
                    break
                await anyio.sleep(0.05)
            after = await client.call_tool("feat_double", {"n": 5})
    assert plugin.pack is not None and plugin.pack.cancelled
    assert after.structured_content == {"doubled": 10}


@pytest.mark.parametrize("json_response", [False, True])
async def test_a_hang_up_while_streaming_or_waiting_cancels_the_call_and_sends_nothing_more(
    tmp_path: Path, json_response: bool
) -> None:
    """The ASGI exchange itself: the client goes away after the call has been silent past ``ping_after`` (an event
    stream with keep-alive comments by then, unless the gateway answers JSON only)."""
    plugin = FeaturePlugin()
    headers, body = _request("feat_work", {"steps": 100, "seconds": 1})
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
    }
    arrivals = [{"type": "http.request", "body": body, "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        if arrivals:
            return arrivals.pop()
        await anyio.sleep(0.35)  # the client hangs up
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async with running_runtime(feature_config(tmp_path), extra_plugins=[("feat", plugin)]) as runtime:
        app = await _front(runtime, _Recorder(), ping_after=0.1, json_response=json_response)
        with anyio.fail_after(5):
            await app(scope, receive, send)
    assert plugin.pack is not None and plugin.pack.cancelled
    if json_response:
        assert sent == []
    else:
        assert sent[0]["type"] == "http.response.start" and dict(sent[0]["headers"])[b"content-type"] == (
            b"text/event-stream"
        )
        assert {m["body"] for m in sent[1:]} == {b": ping\r\n\r\n"}  # keep-alive comments, no answer
