"""Every error response on the MCP endpoint carries a JSON-RPC error, whoever refused the request.

The checks in front of the SDK (body size, Host/Origin, credentials, scopes: :mod:`gateway.http`,
:mod:`gateway.http_security`) answer in the REST envelope, and the SDK itself answers some malformed requests in
plain text (``Invalid Content-Type header``) or with no body at all (406). An MCP client reads neither: the official
SDK then reports only "Server returned an error response". The MCP transport lets an error status carry a JSON-RPC
error response (Streamable HTTP, "Sending Messages" and "Security"), which SDK clients surface as the error of
the request they sent. So on the MCP endpoint this middleware rewrites any error response (status 400 or above)
whose body is not already a JSON-RPC message into one, keeping the status and headers (``WWW-Authenticate``,
``Retry-After``, ``X-Correlation-ID``...)::

    {"jsonrpc": "2.0", "id": <the request's id, or null>, "error": {"code": <int>, "message": <the refusal>,
     "data": <the envelope's error object>}}

``id`` is the refused request's id when its body was a JSON-RPC request that could be read, else ``null`` (a body
too large to read, a notification, a batch, a GET); SDK clients answer the request they sent either way. Other
paths (the REST facade, ``/health``) keep the envelope.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import structlog
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.http_errors import error_body, jsonrpc_code

log = structlog.get_logger(__name__)


def request_id(body: bytes) -> Any:
    """The id to answer ``body`` with: a JSON-RPC request's string or integer id, else ``None``."""
    try:
        message = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    if isinstance(message, dict) and message.get("jsonrpc") == "2.0" and isinstance(message.get("method"), str):
        rpc_id = message.get("id")
        if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool):
            return rpc_id
    return None


class BodyRecorder:
    """An ASGI ``receive`` that remembers the request body, up to ``max_bytes`` (past it, nothing), to find the
    request's JSON-RPC id."""

    def __init__(self, receive: Receive, max_bytes: int) -> None:
        self._receive = receive
        self._max_bytes = max_bytes
        self._seen = bytearray()
        self._overflow = max_bytes <= 0

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request" and not self._overflow:
            self._seen.extend(message.get("body", b""))
            if len(self._seen) > self._max_bytes:
                self._overflow = True
                self._seen.clear()
        return message

    def request_id(self) -> Any:
        """:func:`request_id` of the body read so far (``None`` past the limit)."""
        return None if self._overflow else request_id(bytes(self._seen))


_RECORDED = "gateway.request_body"


def recorded_request_id(scope: Scope) -> Any:
    """The JSON-RPC id of the request :class:`JsonRpcErrorBodies` (outside the caller) recorded, else ``None``."""
    body = scope.get("state", {}).get(_RECORDED)
    return body.request_id() if isinstance(body, BodyRecorder) else None


def as_jsonrpc_error(status: int, body: bytes, rpc_id: Any) -> dict[str, Any] | None:
    """``body`` of an error response at ``status`` as a JSON-RPC error, or ``None`` when it already is one.

    The envelope's ``error`` object becomes ``data`` (its ``message`` the JSON-RPC message); a text body becomes
    the message of a fresh envelope error; an empty body is described by why the SDK sends one (a 406: what the
    client must accept), else by the status' reason phrase.
    """
    try:
        parsed = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and parsed.get("jsonrpc") == "2.0":
        return None
    envelope = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(envelope, dict) and isinstance(envelope.get("message"), str):
        data = envelope
    else:
        text = body.decode("utf-8", errors="replace").strip()
        data = error_body(status, text or _reason(status))
    return {
        "jsonrpc": "2.0",
        "id": rpc_id,
        "error": {"code": jsonrpc_code(status), "message": data["message"], "data": data},
    }


_EMPTY_BODY_REASONS = {
    406: "Not Acceptable: the client must accept application/json, and text/event-stream where the server may stream "
    "its answer (send Accept: application/json, text/event-stream)",
}
"""Why the SDK refused, for the statuses it answers with no body (the 2026-07-28 era's 406)."""


def _reason(status: int) -> str:
    if status in _EMPTY_BODY_REASONS:
        return _EMPTY_BODY_REASONS[status]
    try:
        return f"HTTP {status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"HTTP {status}"


class JsonRpcErrorBodies:
    """Rewrites error responses on ``path`` into JSON-RPC errors (see the module doc).

    Successful responses, event streams included, pass through untouched; only error responses (short by nature)
    are held until complete. The request body is remembered up to ``max_body_bytes`` to find the request's id.
    """

    def __init__(self, app: ASGIApp, path: str, max_body_bytes: int) -> None:
        self.app = app
        self.path = path
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        body = BodyRecorder(receive, self.max_body_bytes)
        scope.setdefault("state", {})[_RECORDED] = body  # for the middleware inside that answers a cut request
        held: Message | None = None
        chunks: list[bytes] = []

        async def rewriting_send(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message.get("status", 200) >= 400:
                held = message
                return
            if held is None or message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            await self._send_error(held, b"".join(chunks), body.request_id(), scope, send)

        await self.app(scope, body.receive, rewriting_send)

    async def _send_error(self, start: Message, body: bytes, rpc_id: Any, scope: Scope, send: Send) -> None:
        status = start["status"]
        rewritten = as_jsonrpc_error(status, body, rpc_id)
        headers = MutableHeaders(raw=list(start.get("headers", [])))
        if rewritten is not None:
            data = rewritten["error"]["data"]
            body = json.dumps(rewritten, ensure_ascii=False, separators=(",", ":")).encode()
            headers["content-type"] = "application/json"
            headers["content-length"] = str(len(body))
            if "x-correlation-id" not in headers and isinstance(data.get("correlation_id"), str):
                headers["x-correlation-id"] = data["correlation_id"]
                log.info(
                    "request refused by the MCP transport",
                    status=status,
                    message=data["message"],
                    path=scope.get("path"),
                    correlation_id=data["correlation_id"],
                )
        await send({**start, "headers": headers.raw})
        await send({"type": "http.response.body", "body": body, "more_body": False})
