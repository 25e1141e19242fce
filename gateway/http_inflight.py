"""What the HTTP server has in flight when it stops: clients' event streams end at once, requests get the grace.

An MCP client keeps an event stream open on the MCP endpoint for its whole session: a GET in the handshake era, a
POST of ``subscriptions/listen`` at 2026-07-28. uvicorn's graceful stop waits for every open response, so without
:meth:`InFlight.end_streams` the stop would wait until the client hangs up or ``transport.shutdown_grace_seconds``
runs out. At the stop the streams are ended cleanly (the response completes).

Every other request may run for the grace; then :meth:`InFlight.cut_requests` cancels those still running, and
each is answered instead of dropped: a ``503`` error saying the gateway is stopping (retryable, ``Retry-After``),
which :class:`gateway.http_jsonrpc.JsonRpcErrorBodies` (around this middleware) turns into a JSON-RPC error with the
request's id on the MCP endpoint; the REST envelope elsewhere. A call whose answer had already begun as an event
stream gets that JSON-RPC error as its last event. (Left to uvicorn, a cut request is a plain-text ``500`` and an
error with a traceback in the log.)
"""

from __future__ import annotations

import json

import anyio
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http_errors import error_envelope
from gateway.http_jsonrpc import as_jsonrpc_error, recorded_request_id

__all__ = ["InFlight"]

log = structlog.get_logger(__name__)

STOPPING = "the gateway is stopping: the request was still running when the shutdown grace period ran out; retry it"


class InFlight:
    """ASGI middleware: event streams on ``path`` run until :meth:`end_streams`; other HTTP requests until
    :meth:`cut_requests`. ``app`` may be set after construction (the server holds this object before the
    application around it is built)."""

    def __init__(self, path: str, app: ASGIApp | None = None) -> None:
        self.app = app
        self.path = path
        self._streams: set[anyio.CancelScope] = set()
        self._requests: set[anyio.CancelScope] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert self.app is not None, "InFlight.app is not set"
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_stream = self._is_stream(scope)
        started = ended = False
        event_stream = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, ended, event_stream
            if message["type"] == "http.response.start":
                started = True
                event_stream = any(
                    name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                    for name, value in message.get("headers", [])
                )
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                ended = True
            await send(message)

        registry = self._streams if is_stream else self._requests
        with anyio.CancelScope() as running:
            registry.add(running)
            try:
                await self.app(scope, receive, tracking_send)
            finally:
                registry.discard(running)
        if not running.cancelled_caught or ended:
            return
        if is_stream and started:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await self._answer_cut(scope, receive, send, started=started, event_stream=event_stream)

    def _is_stream(self, scope: Scope) -> bool:
        if scope["path"] != self.path:
            return False
        if scope["method"] == "GET":
            return True
        return scope["method"] == "POST" and (b"mcp-method", b"subscriptions/listen") in (
            (name.lower(), value) for name, value in scope["headers"]
        )

    async def _answer_cut(
        self, scope: Scope, receive: Receive, send: Send, *, started: bool, event_stream: bool
    ) -> None:
        refusal = error_envelope(503, STOPPING, retry_after=1)
        log.warning(
            "request cut at shutdown",
            path=scope["path"],
            method=scope["method"],
            correlation_id=refusal.headers["x-correlation-id"],
        )
        if not started:
            await refusal(scope, receive, send)
            return
        rpc_id = recorded_request_id(scope)
        last = b""
        if event_stream and scope["path"] == self.path and rpc_id is not None:
            error = as_jsonrpc_error(503, refusal.body, rpc_id)
            last = b"event: message\r\ndata: " + json.dumps(error, separators=(",", ":")).encode() + b"\r\n\r\n"
        await send({"type": "http.response.body", "body": last, "more_body": False})

    def end_streams(self) -> None:
        """End every open event stream (the server is stopping)."""
        for stream in list(self._streams):
            stream.cancel()

    def cut_requests(self) -> None:
        """Cancel every request still running (the shutdown grace period is over); each is answered with a 503."""
        for request in list(self._requests):
            request.cancel()
