"""The gateway answering the most frequent MCP exchange itself: a 2026-07-28 ``tools/call`` over HTTP.

At the 2026-07-28 revision a request is one self-contained POST, answered by one JSON-RPC response. For a tool call
that asked for neither progress nor log messages, nothing else can happen on that exchange, and the SDK's general
machinery (its transport, dispatcher and per-request connection objects) costs about as much CPU as the call
itself does in a gateway that forwards it elsewhere. This middleware, inside the gateway's own checks (body limit,
Host/Origin, credentials, scopes: the principal is on ``scope["state"]``), takes such a call straight to the
runtime; every other request, and any request the SDK's checks would refuse or shape differently, goes on to the
SDK's app unchanged. What the protocol requires (the envelope and routing-header ladder, ``Mcp-Param-*`` checks,
the answer's shape and error codes) is decided by :class:`Exchange`, which :mod:`gateway.mcp_adapter` implements
with the SDK's own functions, so the two paths cannot disagree on the rules.

Like the SDK, a call that runs longer than ``ping_after`` seconds for a client that accepts event streams is
answered as an SSE stream with keep-alive comments (so a proxy's idle timeout does not cut it), and a client that
closes the connection cancels the call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway.api.context import Principal
from gateway.asgi_body import buffered

__all__ = ["Admitted", "Exchange", "FastToolCalls"]

PING_AFTER = 15.0
"""Seconds a silent call runs before the answer becomes an event stream with keep-alive comments (the SDK's)."""


@dataclass(frozen=True)
class Admitted:
    """A ``tools/call`` this path may answer."""

    request_id: str | int
    name: str
    arguments: Mapping[str, Any] | None
    sse: bool
    """The client accepts an event stream and the gateway does not insist on JSON: a long call may switch to SSE."""
    version: str
    """The request's protocol version."""


class Exchange(Protocol):
    """The protocol's rules for one exchange, from the SDK (:mod:`gateway.mcp_adapter`)."""

    def admit(self, scope: Scope, headers: Mapping[str, str], message: Any) -> Admitted | None:
        """The call when it is a well-formed 2026-07-28 ``tools/call`` that asked for no progress and no logs and
        that the SDK would accept; else None (the SDK answers it)."""

    def answer(self, call: Admitted, result: dict[str, Any]) -> bytes:
        """The JSON-RPC response carrying ``result`` (wire JSON of a tool result)."""

    def failure(self, request_id: str | int, exc: Exception) -> tuple[int, bytes]:
        """The HTTP status and JSON-RPC error answering a call that raised ``exc``."""

    async def call(self, call: Admitted, principal: Principal, headers: dict[str, str], transport: str) -> Any:
        """Run the call through the runtime for ``principal``, as arrived over ``transport`` (``http``, ``stdio``)
        with ``headers``; the tool result as wire JSON."""


class FastToolCalls:
    """ASGI middleware: modern ``tools/call`` POSTs on ``path`` answered by ``exchange`` (and its runtime)."""

    def __init__(
        self,
        app: ASGIApp,
        exchange: Exchange,
        *,
        path: str,
        modern: frozenset[str],
        ping_after: float = PING_AFTER,
    ) -> None:
        self.app = app
        self.ping_after = ping_after
        self.exchange = exchange
        self.path = path
        self.modern = modern

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if headers.get("mcp-method") != "tools/call" or headers.get("mcp-protocol-version") not in self.modern:
            await self.app(scope, receive, send)
            return
        state = scope.get("state", {})
        if "mcp_message" in state:  # the security middleware in front has read and parsed the body
            message = state["mcp_message"]
        else:
            body, receive = await buffered(receive)
            try:
                message = orjson.loads(body)
            except orjson.JSONDecodeError:
                message = None
        admitted = self.exchange.admit(scope, headers, message) if isinstance(message, dict) else None
        principal = state.get("principal")
        if admitted is None or principal is None:
            await self.app(scope, receive, send)
            return
        await self._serve(admitted, principal, headers, receive, send)

    async def _serve(
        self, call: Admitted, principal: Principal, headers: dict[str, str], receive: Receive, send: Send
    ) -> None:
        # The call runs in this task. Beside it, one task waits for the client to hang up (which cancels the call),
        # and for a client that accepts event streams a timer switches a call silent for ``ping_after`` seconds to
        # an SSE stream with keep-alive comments. A task group for the call would cost as much CPU as the rest of
        # the exchange's own work.
        reply = _Reply(send, self.ping_after if call.sse else None)
        with anyio.CancelScope() as scope:
            reply.watch(receive, scope)
            try:
                result = await self.exchange.call(call, principal, headers, "http")
            except Exception as exc:
                status, payload = self.exchange.failure(call.request_id, exc)
            else:
                status, payload = 200, self.exchange.answer(call, result)
            await reply.deliver(status, payload)
        if scope.cancelled_caught:  # the client has gone: nobody to answer
            await reply.abandon()


class _Reply:
    """How one call's answer leaves: a JSON body, or, once the call has been silent for ``ping_after`` seconds, an
    SSE stream kept alive with comments until the answer's event. Runs on asyncio (as uvicorn does)."""

    def __init__(self, send: Send, ping_after: float | None) -> None:
        self._send = send
        self._ping_after = ping_after
        self._timer: asyncio.TimerHandle | None = None
        self._pinger: asyncio.Task[None] | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._stop = anyio.Event() if ping_after is not None else None
        self._answering = False

    def watch(self, receive: Receive, scope: anyio.CancelScope) -> None:
        """Cancel ``scope`` if the client hangs up before the answer; start the keep-alive timer."""
        self._watcher = asyncio.ensure_future(self._cancel_on_disconnect(receive, scope))
        if self._ping_after is not None:
            self._timer = asyncio.get_running_loop().call_later(self._ping_after, self._start_stream)

    async def _cancel_on_disconnect(self, receive: Receive, scope: anyio.CancelScope) -> None:
        # ASGI: receive() gives http.disconnect once the response is complete, or when the client has gone.
        while (await receive())["type"] != "http.disconnect":
            pass
        if not self._answering:
            scope.cancel()

    def _start_stream(self) -> None:
        self._pinger = asyncio.ensure_future(self._keep_alive())

    async def _keep_alive(self) -> None:
        assert self._stop is not None and self._ping_after is not None
        await self._send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
        while not self._stop.is_set():
            await self._send({"type": "http.response.body", "body": b": ping\r\n\r\n", "more_body": True})
            with anyio.move_on_after(self._ping_after):
                await self._stop.wait()

    async def _stop_stream(self) -> bool:
        """Stop the timer and the keep-alive comments; whether the answer is an event stream by then."""
        if self._timer is not None:
            self._timer.cancel()
        if self._pinger is None:
            return False
        assert self._stop is not None
        self._stop.set()
        await self._pinger
        return True

    async def deliver(self, status: int, payload: bytes) -> None:
        self._answering = True
        if await self._stop_stream():
            event = b"event: message\r\ndata: " + payload + b"\r\n\r\n"
            await self._send({"type": "http.response.body", "body": event, "more_body": False})
        else:
            await _send_json(self._send, status, payload)

    async def abandon(self) -> None:
        self._answering = True
        with anyio.CancelScope(shield=True):
            await self._stop_stream()


_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]


async def _send_json(send: Send, status: int, payload: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})
