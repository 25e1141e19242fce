"""The direct ``tools/call`` exchange with an HTTP upstream (:mod:`gateway.upstream_http`), against a real HTTP
server that answers the way a 2026-07-28 server may: JSON, an SSE stream (pings, notifications, an event split
over several chunks and ``data:`` lines), JSON-RPC errors at an error status, and answers that are not MCP.
The exchange with the SDK's own server, ``Mcp-Param-*`` headers included, runs in
``tests/plugins/remote/test_http_upstream.py``."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web

from gateway.api import ValidationFailed
from gateway.api.upstream import UpstreamAnswerLost, UpstreamConnectionLost, UpstreamRequestFailed
from gateway.upstream_http import DirectCalls

pytestmark = pytest.mark.anyio

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


@asynccontextmanager
async def _server(handler: Handler) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/mcp", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        host, port = runner.addresses[0][:2]
        yield f"http://{host}:{port}/mcp"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def _calls(url: str, *, max_event_bytes: int = 1 << 20) -> AsyncIterator[DirectCalls]:
    calls = DirectCalls(
        url,
        {"Authorization": "Bearer upstream-token"},
        protocol_version="2026-07-28",
        meta=META,
        routing=lambda name, arguments: {"Mcp-Name": name, "Mcp-Param-Region": str(arguments.get("region", ""))},
        max_event_bytes=max_event_bytes,
    )
    await calls.start()
    try:
        yield calls
    finally:
        await calls.aclose()


def _result(request_id: Any, text: str) -> dict[str, Any]:
    content = [{"type": "text", "text": text}]
    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": content, "isError": False}}


async def test_the_request_carries_the_envelope_and_routing_headers() -> None:
    seen: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append((dict(request.headers), body))
        return web.json_response(_result(body["id"], "ok"))

    async with _server(handler) as url, _calls(url) as calls:
        answer = await calls.call_tool("lookup", {"region": "eu", "q": "x"})
    headers, body = seen[0]
    assert answer["content"] == [{"type": "text", "text": "ok"}]
    assert body["method"] == "tools/call" and body["params"] == {
        "name": "lookup",
        "arguments": {"region": "eu", "q": "x"},
        "_meta": META,
    }
    assert headers["MCP-Protocol-Version"] == "2026-07-28" and headers["Mcp-Method"] == "tools/call"
    assert headers["Mcp-Name"] == "lookup" and headers["Mcp-Param-Region"] == "eu"
    assert headers["Authorization"] == "Bearer upstream-token"  # the configured credential, nothing else
    assert "text/event-stream" in headers["Accept"] and "application/json" in headers["Accept"]


async def test_an_answer_in_an_event_stream() -> None:
    async def handler(request: web.Request) -> web.StreamResponse:
        request_id = (await request.json())["id"]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}}
        other = _result(request_id + 1000, "not ours")
        answer = json.dumps(_result(request_id, "streamed"), indent=1).split("\n")  # several data: lines
        frames = [": ping\r\n\r\n", f"event: message\r\ndata: {json.dumps(note)}\r\n\r\n"]
        frames.append(f"data: {json.dumps(other)}\n\n")
        frames.append("event: message\r\n" + "".join(f"data: {line}\r\n" for line in answer) + "\r\n")
        for frame in frames:
            encoded = frame.encode()
            for cut in range(0, len(encoded), 7):  # arrives in small chunks
                await response.write(encoded[cut : cut + 7])
        await response.write_eof()
        return response

    async with _server(handler) as url, _calls(url) as calls:
        answer = await calls.call_tool("t", {})
    assert answer["content"][0]["text"] == "streamed"


async def test_errors_are_named() -> None:
    async def handler(request: web.Request) -> web.Response:
        name = (await request.json())["params"]["name"]
        if name == "invalid":
            error = {"code": -32602, "message": "Unknown tool: invalid", "data": {"tool": "invalid"}}
            return web.json_response({"jsonrpc": "2.0", "id": None, "error": error}, status=400)
        if name == "crash":
            return web.Response(status=500, text="Internal Server Error")
        if name == "html":
            return web.Response(text="<html>a proxy page</html>", content_type="text/html")
        if name == "garbled":
            return web.Response(body=b"{not json", content_type="application/json")
        if name == "short":  # a stream that ends before the answer
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await response.write(b": ping\r\n\r\n")
            await response.write_eof()
            return response
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})  # "huge"
        await response.prepare(request)
        await response.write(b"data: " + b"x" * 5000 + b"\r\n\r\n")
        await response.write_eof()
        return response

    failures: dict[str, Exception] = {}
    async with _server(handler) as url, _calls(url, max_event_bytes=4096) as calls:
        for name in ("invalid", "crash", "html", "garbled", "short", "huge"):
            try:
                await calls.call_tool(name, {})
            except (UpstreamRequestFailed, UpstreamConnectionLost, UpstreamAnswerLost) as exc:
                failures[name] = exc
    invalid = failures["invalid"]
    assert isinstance(invalid, UpstreamRequestFailed) and invalid.code == -32602
    assert invalid.message == "Unknown tool: invalid" and invalid.data == {"tool": "invalid"}
    assert "HTTP 500" in str(failures["crash"])
    assert "text/html" in str(failures["html"])
    assert "not JSON" in str(failures["garbled"])
    assert isinstance(failures["short"], UpstreamAnswerLost)  # that answer only: the session stays (calls went on)
    assert "4096 bytes" in str(failures["huge"])


async def test_a_server_that_is_gone() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens here once the socket closes
    async with _calls(f"http://127.0.0.1:{port}/mcp") as calls:
        with pytest.raises(UpstreamConnectionLost, match="connection"):
            await calls.call_tool("t", {})


async def test_a_proxy_from_the_environment_is_used_unless_no_proxy_exempts_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``HTTP_PROXY`` and ``NO_PROXY`` apply as they do to the SDK's client (read once, when the exchange starts)."""
    through_proxy: list[str] = []
    direct: list[str] = []

    async def proxy(request: web.Request) -> web.Response:
        through_proxy.append(str(request.url))
        return web.json_response(_result((await request.json())["id"], "via the proxy"))

    async def upstream(request: web.Request) -> web.Response:
        direct.append(str(request.url))
        return web.json_response(_result((await request.json())["id"], "direct"))

    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "http_proxy"):
        monkeypatch.delenv(name, raising=False)
    async with _server(proxy) as proxy_url, _server(upstream) as url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url.removesuffix("/mcp"))
        async with _calls(url) as calls:
            proxied = await calls.call_tool("lookup", {})
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        async with _calls(url) as calls:
            exempt = await calls.call_tool("lookup", {})
    assert proxied["content"][0]["text"] == "via the proxy"
    assert through_proxy and through_proxy[0].endswith("/mcp")
    assert exempt["content"][0]["text"] == "direct" and len(direct) == 1


async def test_arguments_too_deep_to_send_are_the_callers_error() -> None:
    deep: dict = {}
    for _ in range(300):  # past orjson's 255 levels
        deep = {"d": deep}
    async with _calls("http://127.0.0.1:9/mcp") as calls:  # refused before any connection
        with pytest.raises(ValidationFailed) as caught:
            await calls.call_tool("t", {"nested": deep})
    assert caught.value.details["errors"][0]["field"] == "arguments"
