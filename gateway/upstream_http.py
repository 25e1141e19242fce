"""The direct exchange for a 2026-07-28 ``tools/call`` to an HTTP upstream: one POST, its answer, nothing else.

At the 2026-07-28 revision a request over Streamable HTTP is self-contained (no session, no handshake): the
envelope (protocol version, client info and capabilities in ``params._meta``) and the routing headers
(``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name``, ``Mcp-Param-*``) travel with every POST, and the answer is
the JSON-RPC response in the body (JSON, or one SSE stream when the server sends notifications first or keeps the
connection alive with pings). Cancelling is closing the connection.

The SDK's client does the same through a general machinery (message streams, a dispatcher task, per-message
validation) that costs about five times the CPU of the exchange itself, in a process that exists to forward
calls. So the most frequent request, a tool call that asked for no progress, goes straight over the gateway's small
HTTP/1.1 client (:mod:`gateway.http_client`); everything else (the handshake era, progress, listings, resources,
prompts) stays with the SDK's client (:mod:`gateway.mcp_adapter`, which also supplies the envelope and the
``Mcp-Param-*`` headers: the protocol's rules stay in the SDK).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from gateway import __version__
from gateway.api.errors import ValidationFailed
from gateway.api.upstream import UpstreamAnswerLost, UpstreamConnectionLost, UpstreamRequestFailed
from gateway.http_client import HttpClient, Response

__all__ = ["DirectCalls"]

RoutingHeaders = Callable[[str, Mapping[str, Any]], dict[str, str]]
"""``(tool name, arguments) -> {"Mcp-Name": ..., "Mcp-Param-*": ...}`` for the tool as the server listed it."""


class DirectCalls:
    """``tools/call`` POSTs to one upstream over pooled keep-alive connections (open with :meth:`start`)."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        *,
        protocol_version: str,
        meta: Mapping[str, Any],
        routing: RoutingHeaders,
        max_event_bytes: int,
    ) -> None:
        self._url = url
        self._headers = {
            **headers,  # the configured ones only: nothing of the gateway's caller
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": protocol_version,
            "Mcp-Method": "tools/call",
        }
        self._meta = dict(meta)
        self._routing = routing
        self._max_event_bytes = max_event_bytes
        self._ids = itertools.count(1)
        self._http: HttpClient | None = None

    async def start(self) -> None:
        """Read the proxy settings (``HTTP(S)_PROXY``, ``NO_PROXY``: as the SDK's client on the other exchanges).
        Reading the answer has no timeout of its own: the caller bounds each call."""
        self._http = HttpClient(self._url, user_agent=f"mcp-gateway/{__version__}")

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result as wire JSON; raises the errors of :mod:`gateway.api.upstream`."""
        assert self._http is not None, "start() first"
        request_id = next(self._ids)
        body = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": dict(arguments), "_meta": self._meta},
        }
        headers = {**self._headers, **self._routing(name, arguments)}
        try:
            payload = orjson.dumps(body)
        except orjson.JSONEncodeError as exc:  # nested past orjson's 255 levels, say
            raise ValidationFailed(
                f"arguments: cannot be sent upstream: {exc}",
                details={"errors": [{"field": "arguments", "message": f"cannot be sent upstream: {exc}"}]},
            ) from None
        answering = False
        try:
            async with self._http.post(headers, payload) as response:
                answering = True
                kind = response.headers.get("content-type", "").lower()
                if kind.startswith("text/event-stream") and response.status < 300:
                    return _answer(await self._from_events(response, request_id), response.status)
                raw = await response.read()
                return _answer(_decode(raw, kind, response.status), response.status)
        except OSError as exc:
            reason = f"the connection ended: {exc or type(exc).__name__}"
            if answering:  # the server took the request and began its answer: this one answer was lost
                raise UpstreamAnswerLost(reason) from exc
            raise UpstreamConnectionLost(reason) from exc

    async def _from_events(self, response: Response, request_id: int) -> Any:
        """The response among the stream's events (notifications before it are not asked for: dropped)."""
        data: list[bytes] = []
        size = 0
        pending = b""
        async for chunk in response.chunks():
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                line = line.removesuffix(b"\r")
                if line.startswith(b"data:"):
                    field = line[5:].removeprefix(b" ")
                    size += len(field)
                    if size > self._max_event_bytes:
                        raise UpstreamRequestFailed(f"an event of the answer exceeds {self._max_event_bytes} bytes")
                    data.append(field)
                elif not line and data:
                    message = _json(b"\n".join(data))
                    data, size = [], 0
                    if isinstance(message, dict) and message.get("id") == request_id:
                        response.done()  # the server ends the stream next: the connection stays in the pool
                        return message
            if len(pending) > self._max_event_bytes:
                raise UpstreamRequestFailed(f"an event of the answer exceeds {self._max_event_bytes} bytes")
        raise UpstreamAnswerLost("the server closed the answer's event stream before answering")


def _json(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise UpstreamRequestFailed("the server's answer is not JSON") from None


def _decode(raw: bytes, kind: str, status: int) -> Any:
    if kind.startswith("application/json"):
        return _json(raw)
    if status >= 400:
        reason = "no JSON-RPC error in the body" if raw else "an empty body"
        raise UpstreamRequestFailed(f"the server answered HTTP {status} with {reason}")
    raise UpstreamRequestFailed(f"unexpected content type {kind or '(none)'!r} in the server's answer")


def _answer(message: Any, status: int) -> dict[str, Any]:
    if not isinstance(message, dict):
        raise UpstreamRequestFailed("the server's answer is not a JSON-RPC response")
    error = message.get("error")
    if isinstance(error, dict):
        code = error.get("code")
        raise UpstreamRequestFailed(
            str(error.get("message") or f"HTTP {status}"),
            code=code if isinstance(code, int) else None,
            data=error.get("data"),
        )
    result = message.get("result")
    if status >= 400 or not isinstance(result, dict):
        raise UpstreamRequestFailed(f"the server's answer (HTTP {status}) carries no result")
    return result
