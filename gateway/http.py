"""MCP Streamable HTTP (both protocol eras) plus ``/health`` and the REST facade, behind auth and limits.

Request order: CORS → body-size limit → authentication (MCP and REST paths) → route. Credentials are accepted only
from headers; a token or key in the query string is refused outright.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import structlog
import uvicorn
from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import __version__, mcp_adapter
from gateway.api.context import Principal
from gateway.api.errors import ConfigError, Forbidden, ToolError
from gateway.http_errors import error_envelope
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

_QUERY_CREDENTIALS = {"access_token", "api_key", "apikey", "token", "key", "x-api-key"}
_PUBLIC_PATHS = ("/health", "/.well-known/", "/api/v1/openapi.json")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413, by Content-Length or while streaming."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await self._refuse(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise _BodyTooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _BodyTooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_envelope(413, f"the request body exceeds the limit of {self.limit} bytes")
        await response(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


class AuthMiddleware:
    """Authenticate MCP and REST requests; the principal goes to ``request.state.principal``.

    A ``tools/call`` over MCP for a tool whose scope the caller lacks is refused here with 403 and an
    ``insufficient_scope`` challenge (the MCP authorization spec), before the SDK sees it.
    """

    def __init__(self, app: ASGIApp, runtime: GatewayRuntime) -> None:
        self.app = app
        self.runtime = runtime
        cfg = runtime.loaded.config
        self.mcp_path = cfg.transport.path
        self.authenticator = None if cfg.providers.auth == "none" else runtime.providers.get("auth")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or scope.get("method") == "OPTIONS" or path.startswith(_PUBLIC_PATHS):
            await self.app(scope, receive, send)
            return
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        if _QUERY_CREDENTIALS & {name.lower() for name in query}:
            response = error_envelope(401, "credentials are accepted only in headers, never in the query string")
            await response(scope, receive, send)
            return
        if self.authenticator is None:
            principal = self.runtime.default_principal
        else:
            try:
                principal = await self.authenticator.authenticate(Headers(scope=scope))
            except ToolError as err:
                await self._refuse(err, scope, receive, send)
                return
        scope.setdefault("state", {})["principal"] = principal
        if self.authenticator is not None and path == self.mcp_path and scope.get("method") == "POST":
            body = await _read_body(receive)
            denied = self._missing_scope(body, principal)
            if denied is not None:
                await self._refuse(denied, scope, receive, send)
                return
            receive = _replay(body, receive)
        await self.app(scope, receive, send)

    def _missing_scope(self, body: bytes, principal: Principal) -> Forbidden | None:
        try:
            message = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            return None  # the SDK answers malformed JSON-RPC itself
        messages = message if isinstance(message, list) else [message]
        for item in messages:
            if not isinstance(item, dict) or item.get("method") != "tools/call":
                continue
            name = (item.get("params") or {}).get("name")
            served = self.runtime.tools.get(name) if isinstance(name, str) else None
            if served is not None and not principal.allows(served.tool.scope):
                return Forbidden(
                    f"the caller lacks the scope {served.tool.scope!r} required by {name}",
                    details={"scope": served.tool.scope},
                )
        return None

    async def _refuse(self, err: ToolError, scope: Scope, receive: Receive, send: Send) -> None:
        challenge = self.authenticator.challenge(err) if self.authenticator is not None else None
        response = error_envelope(
            err.http_status,
            err.message,
            detail={"code": err.code, **err.details} if err.details else {"code": err.code},
            retryable=err.retryable,
            headers={"WWW-Authenticate": challenge} if challenge else None,
        )
        await response(scope, receive, send)


async def _read_body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _health(runtime: GatewayRuntime) -> Callable[[Request], Awaitable[JSONResponse]]:
    async def health(request: Request) -> JSONResponse:
        return JSONResponse(
            {"status": "ok", "version": __version__, "packs": list(runtime.packs), "tools": len(runtime.tools)}
        )

    return health


def extra_routes(runtime: GatewayRuntime) -> list[BaseRoute]:
    """``/health``, and the REST facade and OAuth metadata when enabled."""
    routes: list[BaseRoute] = [Route("/health", _health(runtime), methods=["GET"])]
    cfg = runtime.loaded.config
    if cfg.transport.rest:
        from gateway.rest import rest_routes

        routes += rest_routes(runtime)
    return routes


def build_http_app(runtime: GatewayRuntime, host: str | None = None) -> ASGIApp:
    """The full HTTP application for a started runtime, to be bound on ``host`` (default: the configured one)."""
    t = runtime.loaded.config.transport
    host = host or t.host
    if not is_loopback(host) and runtime.loaded.config.providers.auth == "none" and not t.allow_unauthenticated_remote:
        raise ConfigError(
            f"{runtime.loaded.source}: 'transport.host' is {host!r} (not loopback) but 'providers.auth' is "
            f"'none': configure api_key or jwt, or set transport.allow_unauthenticated_remote = true"
        )
    app: ASGIApp = mcp_adapter.http_app(
        runtime,
        path=t.path,
        host=host,
        allowed_hosts=t.allowed_hosts,
        allowed_origins=t.allowed_origins,
        max_body_bytes=t.max_body_bytes,
        json_response=t.json_response,
        routes=extra_routes(runtime),
    )
    app = AuthMiddleware(app, runtime)
    app = BodyLimitMiddleware(app, t.max_body_bytes)
    if t.allowed_origins:
        app = CORSMiddleware(
            app,
            allow_origins=t.allowed_origins,
            allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type", "Mcp-Session-Id", "Mcp-Protocol-Version"],
            expose_headers=["Mcp-Session-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"],
        )
    return app


async def serve_http(
    runtime: GatewayRuntime,
    *,
    host: str | None = None,
    port: int | None = None,
    on_ready: Callable[[int, Callable[[], None]], None] | None = None,
) -> None:
    """Serve until signalled. ``on_ready(port, stop)`` is called once the socket listens; ``stop()`` (callable
    from any thread) asks the server to finish gracefully."""
    t = runtime.loaded.config.transport
    host = host or t.host
    app = build_http_app(runtime, host)
    config = uvicorn.Config(app, host=host, port=t.port if port is None else port, log_config=None, lifespan="on")
    server = uvicorn.Server(config)
    if on_ready is not None:
        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets)
            bound = server.servers[0].sockets[0].getsockname()[1]
            on_ready(bound, lambda: setattr(server, "should_exit", True))

        server.startup = startup  # type: ignore[method-assign]
    log.info("serving MCP over HTTP", host=host, port=config.port, path=t.path)
    await server.serve()
