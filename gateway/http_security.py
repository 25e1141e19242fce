"""The request checks in front of MCP and the REST facade: Host and Origin, credentials, and tool scopes.

For every path but ``/health`` and ``/.well-known/...`` (public by design), and ``/metrics`` when configured public
(``transport.metrics``), in this order (the ``/.well-known/`` documents get the first check, on ``Host`` only: they
describe the server as the client addressed it):

1. ``Host`` must be a loopback name, the bound address, or in ``transport.allowed_hosts`` (DNS-rebinding
   protection; 421 otherwise), and ``Origin``, when sent, a loopback origin or in ``transport.allowed_origins``
   (403 otherwise). The SDK runs the same checks, with the same lists, on the MCP endpoint.
2. Credentials come from headers only: a query string naming a credential parameter is refused (401).
3. The configured authenticator turns the headers into a :class:`gateway.api.Principal` (401 when it refuses),
   stored at ``scope["state"]["principal"]`` for the MCP adapter and the REST API. A public REST route (a health
   probe, the token refresh) is admitted without credentials, as :data:`ANONYMOUS`.
4. A ``tools/call`` over MCP for a tool whose scope the principal lacks is refused with 403 and an
   ``insufficient_scope`` challenge (the MCP authorization spec), before the SDK sees it.
5. The credential headers are then removed from the request: neither the SDK nor any tool, interceptor or log
   line downstream ever sees a key or token.
6. A legacy MCP session (``Mcp-Session-Id``) is bound to the principal that opened it: another principal
   presenting its id is refused (403), as the MCP security best practices advise against session hijacking.

Refusals carry the error envelope (:mod:`gateway.http_errors`; on the MCP endpoint
:mod:`gateway.http_jsonrpc` wraps it in a JSON-RPC error) and the authenticator's ``WWW-Authenticate`` challenge
on 401 and 403.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl

import structlog
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.context import Principal
from gateway.api.errors import (
    Forbidden,
    InternalError,
    RateLimitExceeded,
    ToolError,
    Unauthenticated,
    ValidationFailed,
)
from gateway.asgi_body import BodyTooLarge, buffered
from gateway.http_auth import HttpAuth
from gateway.http_errors import error_body, error_envelope, log_refusal, refused, tool_error_detail
from gateway.http_sessions import SessionOwners
from gateway.runtime import GatewayRuntime
from gateway.wire import Rejection, rejection

log = structlog.get_logger(__name__)

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")
QUERY_CREDENTIALS = frozenset(
    {"access_token", "id_token", "api_key", "apikey", "x-api-key", "x_api_key", "token", "key", "authorization", "jwt"}
)
"""Query parameters refused outright: a credential in a URL ends up in logs, proxies and browser history."""
ANONYMOUS = Principal(subject="anonymous", method="anonymous")
"""Who calls a public REST route when authentication is on: no scopes."""
CREDENTIAL_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "cookie"})
"""Removed once the request is admitted (with any header an ``ApiKey`` challenge names)."""


def is_public(path: str) -> bool:
    """Paths served to anyone: the liveness probe and the ``/.well-known/`` documents."""
    return path == "/health" or path.startswith("/.well-known/")


def allowed_hosts(configured: Sequence[str], bind_host: str) -> list[str]:
    """``Host`` values accepted: loopback names, the bound address (unless a wildcard), and ``configured``."""
    hosts = list(LOOPBACK_HOSTS)
    if bind_host not in ("", "0.0.0.0", "::"):
        name = f"[{bind_host}]" if ":" in bind_host and not bind_host.startswith("[") else bind_host
        hosts += [name, f"{name}:*"]
    return list(dict.fromkeys([*hosts, *configured]))


def allowed_origins(configured: Sequence[str]) -> list[str]:
    """``Origin`` values accepted (besides none at all): loopback origins and ``configured``."""
    return list(dict.fromkeys([*LOOPBACK_ORIGINS, *configured]))


def matches(value: str, patterns: Sequence[str]) -> bool:
    """Exact (case-insensitive) match, or ``base:*`` matching ``base:<port>``."""
    value = value.lower()
    for pattern in patterns:
        pattern = pattern.lower()
        if value == pattern:
            return True
        if pattern.endswith(":*"):
            base, _, port = value.rpartition(":")
            if base == pattern[:-2] and port.isdigit():
                return True
    return False


def scope_refusal(
    runtime: GatewayRuntime, tool_name: str, principal: Principal, arguments: Any = None
) -> Forbidden | None:
    """The refusal for calling ``tool_name`` with ``arguments`` (as sent) without the scope that call needs, or
    None (also for unknown tools). Without ``arguments``, only a tool the principal may not call at all is refused.
    """
    served = runtime.tools.get(tool_name)
    if served is None:
        return None
    tool = served.tool
    if isinstance(arguments, Mapping):  # the scope this call needs, also when the caller holds none of the tool's
        scope = tool.scope_for(arguments)
    elif not tool.visible_to(principal):
        scope = tool.scope
    else:
        return None
    if principal.allows(scope):
        return None
    return Forbidden(f"the caller lacks the scope {scope!r} required by {tool_name}", details={"scope": scope})


class SecurityMiddleware:
    """Host/Origin checks, header-only credentials, authentication and MCP tool scopes (see the module doc)."""

    def __init__(
        self,
        app: ASGIApp,
        runtime: GatewayRuntime,
        auth: HttpAuth,
        *,
        hosts: Sequence[str],
        origins: Sequence[str],
        public: Callable[[str, str], bool] | None = None,
    ) -> None:
        self.app = app
        self.public = public
        """``public(method, path)``: a route admitted without credentials (after the Host/Origin checks)."""
        self.runtime = runtime
        self.auth = auth
        self.hosts = list(hosts)
        self.origins = list(origins)
        self.mcp_path = runtime.loaded.config.transport.path
        self.max_body_bytes = runtime.loaded.config.transport.max_body_bytes
        self.open_paths = {"/metrics"} if runtime.loaded.config.transport.metrics == "public" else set()
        transport = runtime.loaded.config.transport
        capacity = max(20_000, 2 * transport.max_sessions)
        self.sessions = SessionOwners(capacity, idle_seconds=transport.session_idle_seconds)
        self.sessions_per_caller = transport.max_sessions_per_caller
        named = {c.params["header"] for c in auth.challenges if "header" in c.params}
        self.secret_headers = {name.lower().encode("latin-1") for name in CREDENTIAL_HEADERS | named}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/.well-known/"):
            try:  # a document that may name the server by the Host it was asked for (no transport.public_url)
                self._check_host(Headers(scope=scope))
            except ToolError as err:
                await self._refuse(err, scope, receive, send)
                return
        if scope["type"] != "http" or is_public(path) or path in self.open_paths or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        opening: str | None = None
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:  # said by the headers: refused at once
            await self._too_large(scope, receive, send)
            return
        anonymous = self.public is not None and self.public(scope.get("method", ""), path)
        try:  # from the headers alone: no body is read for a caller who is not let in
            principal = await self._admit(scope, headers, anonymous=anonymous)
        except ToolError as err:
            if path == self.mcp_path and scope.get("method") == "POST":
                receive = await _small_message(scope, headers, receive)  # its id, for the JSON-RPC error
            await self._refuse(err, scope, receive, send)
            return
        scope.setdefault("state", {})["principal"] = principal
        message: Any = None
        body = b""
        if path == self.mcp_path and scope.get("method") == "POST":
            try:
                body, receive = await buffered(receive, limit=self.max_body_bytes)
            except BodyTooLarge:
                await self._too_large(scope, receive, send)
                return
            message = _json(body)
            scope["state"]["mcp_message"] = message  # read once: the direct path takes it from here
            try:
                self._check_calls(message, principal)
                if self.auth.enabled and headers.get("mcp-session-id") is None:
                    opening = self._reserve_session(message, principal)
            except ToolError as err:
                await self._refuse(err, scope, receive, send)
                return
        if message is not None and (rejected := rejection(body, message)) is not None:
            await self._reject(rejected, scope, receive, send)  # the SDK: a pydantic dump without the id, or silence
            return
        scope["headers"] = [(k, v) for k, v in scope["headers"] if k.lower() not in self.secret_headers]
        reserved = [opening] if opening is not None else []  # released once bound, or at the end if never bound
        if path == self.mcp_path and self.auth.enabled:
            send = self._track_session(scope, headers.get("mcp-session-id"), principal, send, reserved)
        try:
            await self.app(scope, receive, send)
        finally:
            for owner in reserved:  # the session was not opened
                self.sessions.release(owner)

    def _track_session(
        self, scope: Scope, session_id: str | None, principal: Principal, send: Send, reserved: list[str]
    ) -> Send:
        """Bind a session the SDK opens in this response to ``principal`` (ending its reservation); forget one it
        ends."""
        method = scope.get("method")

        async def tracking_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = message.get("status", 500)
                opened = Headers(raw=message.get("headers", [])).get("mcp-session-id")
                if opened and session_id is None and status < 300:
                    self.sessions.bind(opened, principal.key, reserved=bool(reserved))
                    reserved.clear()
                if session_id is not None and method == "DELETE" and status < 300:
                    self.sessions.forget(session_id)
            await send(message)

        return tracking_send

    def _check_host(self, headers: Headers) -> None:
        host = headers.get("host", "")
        if not matches(host, self.hosts):
            raise ToolError(
                f"the Host header {host!r} is not served here (add it to transport.allowed_hosts)",
                code="misdirected_request",
                http_status=421,
                details={"reason": "host"},
            )

    async def _admit(self, scope: Scope, headers: Headers, *, anonymous: bool = False) -> Principal:
        self._check_host(headers)
        origin = headers.get("origin")
        if origin is not None and not matches(origin, self.origins):
            raise Forbidden(
                f"requests from the origin {origin!r} are not allowed (transport.allowed_origins)",
                details={"reason": "origin"},
            )
        query = {name.lower() for name, _ in parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)}
        if query & QUERY_CREDENTIALS:
            raise Unauthenticated(
                "credentials are accepted only in headers, never in the query string",
                details={"reason": "query_string"},
            )
        if anonymous:
            return ANONYMOUS if self.auth.enabled else await self._authenticate(headers)
        principal = await self._authenticate(headers)
        session_id = headers.get("mcp-session-id")
        owner = self.sessions.owner(session_id) if session_id and scope.get("path") == self.mcp_path else None
        if owner is not None and owner != principal.key:
            raise Forbidden("this MCP session belongs to another caller", details={"reason": "session"})
        return principal

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = f"the request body exceeds the limit of {self.max_body_bytes} bytes"
        await refused(413, message, path=scope.get("path"))(scope, receive, send)

    def _reserve_session(self, message: Any, principal: Principal) -> str | None:
        """For an ``initialize`` (it opens a session of the handshake era): count the session being opened, or
        refuse a caller already holding its quota. The principal's key when a session was counted."""
        if isinstance(message, dict) and message.get("method") == "initialize":
            held = self.sessions.reserve(principal.key, self.sessions_per_caller)
            if held is None:
                return principal.key
            raise RateLimitExceeded(
                f"this caller already holds {held} open MCP sessions (transport.max_sessions_per_caller): end one "
                "with DELETE, or let one go idle for transport.session_idle_seconds",
                details={"reason": "sessions", "limit": self.sessions_per_caller},
            )
        return None

    def _check_calls(self, message: Any, principal: Principal) -> None:
        """Each ``tools/call`` in the message is one ``principal`` may make (its scopes)."""
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and item.get("method") == "tools/call":
                params = item.get("params")
                name = params.get("name") if isinstance(params, dict) else None
                arguments = params.get("arguments") if isinstance(params, dict) else None
                denied = scope_refusal(self.runtime, name, principal, arguments) if isinstance(name, str) else None
                if denied is not None:
                    raise denied

    async def _authenticate(self, headers: Headers) -> Principal:
        authenticator = self.auth.authenticator
        if authenticator is None:
            assert self.runtime.default_principal is not None
            return self.runtime.default_principal
        try:
            return await authenticator.authenticate(headers)
        except ToolError:
            raise
        except Exception as exc:  # an authenticator bug: fail closed, with a trace for operators
            err = InternalError("authentication failed unexpectedly; the server log has the details")
            log.exception("authenticator failed", authenticator=getattr(authenticator, "name", "?"))
            raise err from exc

    async def _reject(self, rejected: Rejection, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a body that is no JSON-RPC message as stdio answers such a line (:func:`gateway.wire.rejection`),
        at 400 with the envelope's error as ``data``."""
        data = error_body(400, rejected.message, details=tool_error_detail(ValidationFailed(rejected.message)))
        answer = rejected.to_json()
        answer["error"]["data"] = data
        response = JSONResponse(answer, status_code=400, headers={"X-Correlation-ID": data["correlation_id"]})
        log_refusal(response, path=scope.get("path"), code=rejected.code)
        await response(scope, receive, send)

    async def _refuse(self, err: ToolError, scope: Scope, receive: Receive, send: Send) -> None:
        headers: dict[str, str] = {}
        authenticator = self.auth.authenticator
        if authenticator is not None and (err.http_status == 401 or "scope" in err.details):
            challenge = authenticator.challenge(err)
            if challenge:
                headers["WWW-Authenticate"] = challenge
        response = error_envelope(
            err.http_status,
            err.message,
            details=tool_error_detail(err),
            retryable=err.retryable,
            headers=headers,
        )
        log_refusal(response, path=scope.get("path"), code=err.code, reason=err.details.get("reason"))
        await response(scope, receive, send)


REFUSED_BODY_BYTES = 65_536
"""How much of a refused caller's body is read, to answer its JSON-RPC request by id (a larger one gets id null)."""


async def _small_message(scope: Scope, headers: Headers, receive: Receive) -> Receive:
    """Read a refused ``/mcp`` POST's body when it declares at most :data:`REFUSED_BODY_BYTES`, leaving the message
    in ``scope["state"]`` for :class:`gateway.http_jsonrpc.JsonRpcErrorBodies`."""
    declared = headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > REFUSED_BODY_BYTES:
        return receive
    try:
        body, receive = await buffered(receive, limit=REFUSED_BODY_BYTES)
    except BodyTooLarge:
        return receive
    scope.setdefault("state", {})["mcp_message"] = _json(body)
    return receive


def _json(body: bytes) -> Any:
    """The parsed message, or None when the body is not JSON (the SDK answers malformed JSON-RPC itself)."""
    try:
        return json.loads(body)  # the parser the SDK uses: a body it reads is never one this check could not
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
