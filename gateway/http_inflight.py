"""What the HTTP server has in flight when it stops: clients' event streams end at once, requests get the grace.

A handshake-era MCP client keeps a GET event stream open on the MCP endpoint for the whole session. uvicorn's
graceful stop waits for every open response, so without :meth:`InFlight.end_streams` the stop would wait until the
client hangs up or ``transport.shutdown_grace_seconds`` runs out. At the stop the streams are ended cleanly (the
response completes).

Every other request may run for the grace; then :meth:`InFlight.cut_requests` cancels those still running, and
each is answered instead of dropped: a ``503`` error saying the gateway is stopping (retryable, ``Retry-After``), as
a JSON-RPC error with the request's id on the MCP endpoint, in the REST envelope elsewhere. A call whose answer
had already begun as an event stream gets that JSON-RPC error as its last event. (Left to uvicorn, a cut request is
a plain-text ``500`` and an error with a traceback in the log.)
"""

from __future__ import annotations

import json

import anyio
import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http_errors import error_envelope
from gateway.http_jsonrpc import BodyRecorder, as_jsonrpc_error

__all__ = ["InFlight"]

log = structlog.get_logger(__name__)

STOPPING = "the gateway is stopping: the request was still running when the shutdown grace period ran out; retry it"


class InFlight:
    """ASGI middleware: GET requests on ``path`` (event streams) run until :meth:`end_streams`; other HTTP requests
    until :meth:`cut_requests`. The body of a request on ``path`` is remembered up to ``max_body_bytes`` to answer a
    cut call with its JSON-RPC id."""

    def __init__(self, app: ASGIApp, path: str, max_body_bytes: int) -> None:
        self.app = app
        self.path = path
        self.max_body_bytes = max_body_bytes
        self._streams: set[anyio.CancelScope] = set()
        self._requests: set[anyio.CancelScope] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        is_stream = scope["method"] == "GET" and scope["path"] == self.path
        body = BodyRecorder(receive, self.max_body_bytes if scope["path"] == self.path else 0)
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
                await self.app(scope, body.receive, tracking_send)
            finally:
                registry.discard(running)
        if not running.cancelled_caught or ended:
            return
        if is_stream:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        await self._answer_cut(scope, send, started=started, event_stream=event_stream, rpc_id=body.request_id())

    async def _answer_cut(self, scope: Scope, send: Send, *, started: bool, event_stream: bool, rpc_id: object) -> None:
        refusal = error_envelope(503, STOPPING, retry_after=1)
        on_mcp = scope["path"] == self.path
        log.warning(
            "request cut at shutdown",
            path=scope["path"],
            method=scope["method"],
            correlation_id=refusal.headers["x-correlation-id"],
        )
        jsonrpc = as_jsonrpc_error(503, refusal.body, rpc_id) if on_mcp else None
        if not started:
            body = refusal.body if jsonrpc is None else json.dumps(jsonrpc, separators=(",", ":")).encode()
            headers = [(k, v) for k, v in refusal.raw_headers if k != b"content-length"]
            headers.append((b"content-length", str(len(body)).encode()))
            await send({"type": "http.response.start", "status": 503, "headers": headers})
            await send({"type": "http.response.body", "body": body, "more_body": False})
            return
        last = b""
        if event_stream and jsonrpc is not None and rpc_id is not None:
            last = b"event: message\r\ndata: " + json.dumps(jsonrpc, separators=(",", ":")).encode() + b"\r\n\r\n"
        await send({"type": "http.response.body", "body": last, "more_body": False})

    def end_streams(self) -> None:
        """End every open event stream (the server is stopping)."""
        for stream in list(self._streams):
            stream.cancel()

    def cut_requests(self) -> None:
        """Cancel every request still running (the shutdown grace period is over); each is answered with a 503."""
        for request in list(self._requests):
            request.cancel()
