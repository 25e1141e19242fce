"""MCP Streamable HTTP (both protocol eras) plus ``/health``, the REST API and the OAuth protected-resource
metadata, behind the security checks and a body limit.

Request order: CORS (when ``transport.allowed_origins`` is set) → JSON-RPC error bodies on the MCP endpoint
(:mod:`gateway.http_jsonrpc`) → what is in flight when the server stops (:mod:`gateway.http_inflight`) → body-size
limit → Host/Origin, header-only credentials, authentication and MCP tool scopes (:mod:`gateway.http_security`) →
route.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import structlog
import uvicorn
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from gateway import mcp_adapter
from gateway.api.errors import ConfigError, GatewayError
from gateway.api.registry import AUTH
from gateway.asgi_body import BodyTooLarge, buffered
from gateway.http_auth import HttpAuth, describe_auth
from gateway.http_errors import refused
from gateway.http_inflight import InFlight
from gateway.http_jsonrpc import JsonRpcErrorBodies
from gateway.http_protocol import HttpLimits, bounded_protocol
from gateway.http_security import SecurityMiddleware, allowed_hosts, allowed_origins, is_public
from gateway.rest import RestApi
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

CORS_EXPOSED_HEADERS = [
    "Mcp-Session-Id",
    "WWW-Authenticate",
    "Retry-After",
    "X-Correlation-ID",
    "X-RateLimit-Limit",
    "X-RateLimit-Remaining",
    "X-RateLimit-Reset",
]


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class BodyLimitMiddleware:
    """Refuse request bodies over ``limit`` bytes with 413: at once by ``Content-Length``, else while reading.

    The body is read (at most ``limit`` bytes) before the application runs, so a refusal is never a response
    the application had already started, whatever route it is for.
    """

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
        try:
            _, replay = await buffered(receive, limit=self.limit)
        except BodyTooLarge:
            await self._refuse(scope, receive, send)
            return
        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = refused(413, f"the request body exceeds the limit of {self.limit} bytes", path=scope.get("path"))
        await response(scope, receive, send)


class _PublicBypass:
    """Sends public paths (``/health``, ``/.well-known/``) past ``guarded`` (the configured CORS policy) to
    ``inner``: the metadata documents carry their own any-origin CORS policy."""

    def __init__(self, guarded: ASGIApp, inner: ASGIApp) -> None:
        self.guarded = guarded
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        public = scope["type"] == "http" and is_public(scope.get("path", ""))
        await (self.inner if public else self.guarded)(scope, receive, send)


CUT_BACKSTOP_SECONDS = 2.0
"""After the shutdown grace, how long requests cut by :class:`InFlight` may take to answer before uvicorn cancels
what is left (a request that ignores its cancellation, say)."""

HEALTH_PROBE_SECONDS = 2.0
"""How long ``/health`` waits for each relational store to answer (:class:`gateway.api.RelationalStore`)."""
HEALTH_CACHE_SECONDS = 1.0
"""How long an answer of ``/health`` stands for the requests after it."""


def _health(runtime: GatewayRuntime) -> Callable[[Request], Awaitable[JSONResponse]]:
    """``/health`` for a load balancer: 200 when every relational store the deployment opened answers, else 503
    naming the store (a replica that cannot serve leaves the rotation). Remote servers being down does not count:
    the gateway's other tools still serve, and ``gateway plugins`` and the metrics show them."""

    last: list[Any] = [-HEALTH_CACHE_SECONDS, {}]  # when the stores were last probed, and what was found

    async def probe() -> dict[str, str]:
        unavailable: dict[str, str] = {}
        for name in runtime.providers.built("store"):
            store = runtime.providers.get("store", name)
            try:
                with anyio.fail_after(HEALTH_PROBE_SECONDS):
                    await (store.probe() if hasattr(store, "probe") else store.fetch_one("SELECT 1 AS ok"))
            except TimeoutError:
                unavailable[f"store:{name}"] = f"no answer within {HEALTH_PROBE_SECONDS:g} s"
            except Exception as exc:
                unavailable[f"store:{name}"] = getattr(exc, "reason", None) or type(exc).__name__
        return unavailable

    async def health(request: Request) -> JSONResponse:
        if anyio.current_time() - last[0] >= HEALTH_CACHE_SECONDS:  # the route is public: probes are shared
            last[0] = anyio.current_time()
            last[1] = await probe()
        unavailable: dict[str, str] = last[1]
        body: dict[str, Any] = {"status": "unavailable" if unavailable else "ok"}  # public: nothing to fingerprint
        if unavailable:  # the route is public: the names only, the reasons go to the log
            body["unavailable"] = sorted(unavailable)
            log.warning("health check failed", unavailable=unavailable)
        return JSONResponse(body, status_code=503 if unavailable else 200)

    return health


def _metrics(runtime: GatewayRuntime) -> Callable[[Request], Awaitable[Response]]:
    from gateway.metrics import CONTENT_TYPE

    async def metrics(request: Request) -> Response:
        return Response(runtime.metrics.render(), media_type=CONTENT_TYPE)

    return metrics


def extra_routes(runtime: GatewayRuntime, auth: HttpAuth | None = None, rest: RestApi | None = None) -> list[BaseRoute]:
    """``/health``, ``/metrics`` unless turned off, the OAuth protected-resource metadata when tokens come from an
    issuer, and the REST API when enabled (``rest``, or one built here)."""
    from gateway.oauth_metadata import protected_resource_routes

    auth = auth or describe_auth(runtime)
    routes: list[BaseRoute] = [Route("/health", _health(runtime), methods=["GET"])]
    if runtime.loaded.config.transport.metrics != "off":
        routes.append(Route("/metrics", _metrics(runtime), methods=["GET"]))
    routes += protected_resource_routes(runtime, auth)
    if runtime.loaded.config.transport.rest:
        routes.append((rest or RestApi(runtime, auth)).mount())
    return routes


def _check_origins(source: str, origins: list[str]) -> None:
    """Each allowed origin is ``scheme://host[:port]`` exactly as browsers send it (``:*`` for any port)."""
    for origin in origins:
        parts = urlsplit(origin)
        if (
            origin in ("*", "null")
            or parts.scheme not in ("http", "https")
            or not parts.netloc
            or origin != (f"{parts.scheme}://{parts.netloc}")
        ):
            raise ConfigError(
                f"{source}: 'transport.allowed_origins': {origin!r} is not an origin; write scheme://host[:port] "
                f"(no path, no trailing slash). '*' and 'null' are refused: they would let any web page call the "
                f"gateway"
            )


def build_http_app(runtime: GatewayRuntime, host: str | None = None, inflight: InFlight | None = None) -> ASGIApp:
    """The full HTTP application for a started runtime, to be bound on ``host`` (default: the configured one);
    ``inflight``, the server's record of what is in flight at its stop, is placed inside the JSON-RPC error bodies
    (its 503 for a cut request is then a JSON-RPC error with the request's id)."""
    t = runtime.loaded.config.transport
    host = host or t.host
    _check_origins(runtime.loaded.source, t.allowed_origins)
    auth = describe_auth(runtime)
    # "none" configured, or a member of a composite (a chain): a caller without credentials gets in
    configured = runtime.loaded.config.providers.auth
    anonymous = configured == "none" or "none" in runtime.providers.built(AUTH)
    if not is_loopback(host) and anonymous and not t.allow_unauthenticated_remote:
        which = (
            "'providers.auth' is 'none'" if configured == "none" else f"the {configured!r} authenticator uses 'none'"
        )
        raise ConfigError(
            f"{runtime.loaded.source}: the bind host (--host or 'transport.host') is {host!r}, not loopback, but "
            f"{which}, which lets callers in without credentials: configure api_key or jwt only, or set "
            "transport.allow_unauthenticated_remote = true"
        )
    rest = RestApi(runtime, auth) if t.rest else None
    hosts = allowed_hosts(t.allowed_hosts, host)
    origins = allowed_origins(t.allowed_origins)
    app: ASGIApp = mcp_adapter.http_app(
        runtime,
        path=t.path,
        host=host,
        allowed_hosts=hosts,
        allowed_origins=origins,
        max_body_bytes=t.max_body_bytes,
        json_response=t.json_response,
        routes=extra_routes(runtime, auth, rest),
    )
    public = rest.is_public if rest is not None else None
    app = BodyLimitMiddleware(app, t.max_body_bytes)  # read after the credentials: a stranger's body is never read
    app = SecurityMiddleware(app, runtime, auth, hosts=hosts, origins=origins, public=public)
    if inflight is not None:
        inflight.app = app
        app = inflight
    app = JsonRpcErrorBodies(app, t.path, t.max_body_bytes)
    if t.allowed_origins:
        cors = CORSMiddleware(
            app,
            allow_origins=t.allowed_origins,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["*"],  # Authorization, X-API-Key, Mcp-* (Mcp-Param-* names vary per tool)
            expose_headers=CORS_EXPOSED_HEADERS,
            max_age=600,
        )
        app = _PublicBypass(cors, app)
    return app


def url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


async def serve_http(
    runtime: GatewayRuntime,
    *,
    host: str | None = None,
    port: int | None = None,
    on_ready: Callable[[int, Callable[[], None]], None] | None = None,
    capture_signals: bool = True,
) -> None:
    """Serve until signalled. ``on_ready(port, stop)`` is called once the socket listens; ``stop()`` (callable
    from any thread) asks the server to finish gracefully. With ``capture_signals=False`` uvicorn leaves
    ``SIGINT``/``SIGTERM`` alone, for a caller that handles them and calls ``stop()`` (uvicorn would re-raise the
    signal once stopped, ending the process before the runtime is stopped)."""
    t = runtime.loaded.config.transport
    host = host or t.host
    inflight = InFlight(t.path)
    config = uvicorn.Config(
        build_http_app(runtime, host, inflight),
        host=host,
        port=t.port if port is None else port,
        log_config=None,
        lifespan="on",
        # a backstop: requests in flight are cut (and answered) when the grace ends; event streams end at once
        timeout_graceful_shutdown=t.shutdown_grace_seconds + CUT_BACKSTOP_SECONDS,
        http=bounded_protocol(HttpLimits(t.max_header_bytes, t.header_timeout_seconds, t.body_timeout_seconds)),
    )
    server = uvicorn.Server(config)
    stopping = server.shutdown

    async def shutdown(sockets: Any = None) -> None:
        inflight.end_streams()
        cut = asyncio.get_running_loop().call_later(t.shutdown_grace_seconds, inflight.cut_requests)
        try:
            await stopping(sockets)
        finally:
            cut.cancel()

    server.shutdown = shutdown  # type: ignore[method-assign]
    if not capture_signals:
        server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]
    if on_ready is not None:
        original = server.startup

        async def startup(sockets: Any = None) -> None:
            await original(sockets)
            bound = server.servers[0].sockets[0].getsockname()[1]
            on_ready(bound, lambda: setattr(server, "should_exit", True))

        server.startup = startup  # type: ignore[method-assign]
    log.info("serving MCP over HTTP", host=host, port=config.port, path=t.path)
    try:
        await server.serve()
    except SystemExit:  # uvicorn exits when it cannot bind (it logged the reason)
        if server.started:
            raise
        raise GatewayError(
            f"cannot listen on {host}:{config.port}: the address is in use or not available here (see the log line "
            "before this one)"
        ) from None
