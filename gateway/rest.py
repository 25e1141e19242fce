"""The REST API at ``/api/v1``: every tool as ``POST /api/v1/tools/{name}``, the caller's tools at
``GET /api/v1/tools``, the routes packs and providers contribute (:class:`gateway.api.RestRoute`), and an OpenAPI
document generated from the same pydantic models (:mod:`gateway.rest_openapi`).

Every request sits behind :class:`gateway.http_security.SecurityMiddleware`, which puts the caller's principal on
``request.state`` (public routes are admitted without credentials). Errors, an unknown path (404) and a method a
path does not serve (405, with ``Allow``) included, use the envelope of :mod:`gateway.http_errors`. Every response
is ``Cache-Control: no-store`` unless its route says otherwise: answers are per caller, and the token refresh
carries tokens (RFC 6749 §5.1).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, compile_path
from starlette.types import Message, Receive, Scope, Send

from gateway.api.context import Principal
from gateway.api.errors import ConfigError, ToolError
from gateway.api.rate_limits import RateDecision
from gateway.api.rest import RestRoute, RestRouteSource
from gateway.api.tools import ScopeByArgument
from gateway.asgi_body import ClientGone, until_disconnected
from gateway.http_auth import HttpAuth
from gateway.http_errors import error_envelope, log_refusal, refused, tool_error_response
from gateway.http_security import scope_refusal
from gateway.rest_limits import RouteLimits, rate_limit_headers
from gateway.rest_openapi import openapi_document
from gateway.rest_routes import ServedRoute, is_json, shape
from gateway.runtime import GatewayRuntime, UnknownTool

PREFIX = "/api/v1"
RESERVED = {("GET", "/tools"), ("POST", "/tools/{}"), ("GET", "/openapi.json")}
"""The built-in routes (method, shape): no contributed route may take them."""

Endpoint = Callable[[Request], Awaitable[Response]]


def _principal(runtime: GatewayRuntime, request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    return principal or runtime.default_principal  # type: ignore[return-value]


def _scope_by(scope_by: ScopeByArgument) -> dict[str, Any]:
    return {"argument": scope_by.argument, "scopes": dict(scope_by.scopes)}


def contributed_routes(runtime: GatewayRuntime) -> Iterator[tuple[str, RestRoute]]:
    """``(owner, route)`` for the routes of every enabled pack, then of every provider built so far that offers
    some (``gateway.api.RestRouteSource``)."""
    for name, pack in runtime.packs.items():
        for route in pack.rest_routes():
            yield f"pack {name!r}", route
    for kind in runtime.plugins.registry.providers:
        for name in runtime.providers.built(kind):
            provider = runtime.providers.get(kind, name)
            if isinstance(provider, RestRouteSource):
                for route in provider.rest_routes():
                    yield f"{kind} provider {name!r}", route


@dataclass(frozen=True)
class _Entry:
    method: str
    path: str
    """Below ``/api/v1``."""
    endpoint: Endpoint
    public: bool = False

    @property
    def regex(self) -> Any:
        return compile_path(PREFIX + self.path)[0]

    def serves(self, method: str) -> bool:
        """Whether a request with ``method`` is for this entry (``HEAD`` is served as ``GET``)."""
        return self.method == method or (method == "HEAD" and self.method == "GET")


class RestApi:
    """The ASGI application mounted at ``/api/v1``: dispatches to the built-in and contributed routes."""

    def __init__(self, runtime: GatewayRuntime, auth: HttpAuth) -> None:
        self.runtime = runtime
        self.auth = auth
        contributed = list(contributed_routes(runtime))
        self.limits = RouteLimits(runtime, contributed)
        self.served = [ServedRoute(runtime, owner, route, self.limits, self._challenge) for owner, route in contributed]
        entries = [
            _Entry("GET", "/tools", self._list_tools),
            _Entry("POST", "/tools/{name}", self._call_tool),
            _Entry("GET", "/openapi.json", self._openapi),
        ]
        self._check_unique(self.served)
        entries += [_Entry(s.route.method, s.route.path, s, s.route.public) for s in self.served]
        # A literal segment wins over a parameter (``/connectors/stats`` before ``/connectors/{id}``).
        entries.sort(key=lambda e: [part.startswith("{") for part in e.path.split("/")])
        self._entries = [(entry, entry.regex) for entry in entries]

    def _check_unique(self, served: list[ServedRoute]) -> None:
        seen: dict[tuple[str, str], str] = {key: "the gateway" for key in RESERVED}
        names: dict[str, str] = {}
        for item in served:
            route = item.route
            key = (route.method, shape(route.path))
            where = f"REST route {route.method} {route.path}"
            if key in seen:
                raise ConfigError(
                    f"{self.runtime.loaded.source}: {where} is offered by {seen[key]} and by {item.owner}; "
                    "enable one of them"
                )
            if route.name in names:
                raise ConfigError(
                    f"{self.runtime.loaded.source}: operation id {route.name!r} is used by {names[route.name]} and "
                    f"by {item.owner} ({where})"
                )
            seen[key] = item.owner
            names[route.name] = item.owner

    def mount(self) -> Mount:
        mount = Mount(PREFIX, app=self)
        # Starlette's catch-all ``{path:path}`` is ``.*``, which stops at a line break: a path holding ``%0A`` would
        # miss this API and get Starlette's plain-text 404 instead of the error envelope.
        mount.path_regex = re.compile(mount.path_regex.pattern, re.DOTALL)
        return mount

    def is_public(self, method: str, path: str) -> bool:
        """Whether ``method path`` is admitted without credentials: a public route, or a public route's path asked
        with a method no route of that path serves (405 whoever asks, as the answer does not depend on who)."""
        matched = [entry for entry, regex in self._entries if regex.match(path)]
        if any(entry.public and entry.serves(method) for entry in matched):
            return True
        return any(entry.public for entry in matched) and not any(entry.serves(method) for entry in matched)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        send = _not_stored(send)
        allowed: list[str] = []
        for entry, regex in self._entries:
            match = regex.match(path)
            if match is None:
                continue
            if not entry.serves(method):
                allowed.append(entry.method)
                continue
            scope["path_params"] = match.groupdict()
            response = await entry.endpoint(Request(scope, receive))
            await response(scope, receive, send)
            return
        if allowed:
            allow = ", ".join(dict.fromkeys(allowed))
            message = f"{method} is not served on {path} (allowed: {allow})"
            response = error_envelope(405, message, headers={"Allow": allow})
        else:
            response = error_envelope(404, f"no REST route {path}")
        await response(scope, receive, send)

    def _challenge(self, err: ToolError | None) -> dict[str, str]:
        value = self.auth.authenticator.challenge(err) if self.auth.authenticator is not None else None
        return {"WWW-Authenticate": value} if value else {}

    # -- the built-in routes -----------------------------------------------------------------------------------

    async def _list_tools(self, request: Request) -> Response:
        principal = _principal(self.runtime, request)
        return JSONResponse(
            {
                "tools": [
                    {
                        "name": s.name,
                        "description": s.tool.description,
                        "scope": s.tool.scope,
                        **({"scope_by": _scope_by(s.tool.scope_by)} if s.tool.scope_by else {}),
                        "input_schema": s.input_schema,
                        "output_schema": s.output_schema,
                    }
                    for s in self.runtime.visible_tools(principal)
                ]
            }
        )

    async def _call_tool(self, request: Request) -> Response:
        runtime = self.runtime
        name = request.path_params["name"]
        principal = _principal(runtime, request)
        context = runtime.new_context(principal=principal, transport="rest", headers=dict(request.headers))
        cid = context.correlation_id
        path = request.url.path

        def refuse(status: int, message: str) -> Response:
            return refused(status, message, path=path, correlation_id=cid)

        def deny(err: ToolError) -> Response:
            return log_refusal(tool_error_response(err, cid, self._challenge(err)), path=path, code=err.code)

        if name not in runtime.tools:
            return refuse(404, f"no tool named {name!r}")
        denied = scope_refusal(runtime, name, principal)
        if denied is not None:
            return deny(denied)
        raw = await request.body()
        if raw.strip() and not is_json(request.headers.get("content-type")):
            return refuse(415, "the body must be sent as application/json")
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except RecursionError:
            return refuse(400, "the body is not valid JSON: nested too deeply")
        except ValueError as exc:  # not JSON, not UTF-8, or an integer past Python's digit limit
            return refuse(400, f"the body is not valid JSON: {exc}")
        if not isinstance(arguments, dict):
            return refuse(400, "the body must be a JSON object")
        denied = scope_refusal(runtime, name, principal, arguments)  # a scope that depends on the arguments
        if denied is not None:
            return deny(denied)
        try:
            outcome = await until_disconnected(request.receive, lambda: runtime.call_tool(name, arguments, context))
        except UnknownTool:  # removed since the check above (a remote server's list changed)
            return refuse(404, f"no tool named {name!r}")
        except ClientGone:  # the call was cancelled and logged so; there is nobody to answer
            return Response(status_code=499)
        decision = context.state.get("rate_limit")
        headers = {
            "X-Correlation-ID": cid,
            **rate_limit_headers(decision if isinstance(decision, RateDecision) else None),
        }
        if outcome.error is not None:
            if outcome.error.http_status == 403:
                headers.update(self._challenge(outcome.error))
            return tool_error_response(outcome.error, cid, headers)
        return JSONResponse(outcome.body, headers=headers)

    async def _openapi(self, request: Request) -> Response:
        principal = _principal(self.runtime, request)
        return JSONResponse(openapi_document(self.runtime, self.auth, principal, self.served))


def _not_stored(send: Send) -> Send:
    """``send``, adding ``Cache-Control: no-store`` to a response that sets no ``Cache-Control`` of its own."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(raw=list(message.get("headers", [])))
            if "cache-control" not in headers:
                headers["Cache-Control"] = "no-store"
                message = {**message, "headers": headers.raw}
        await send(message)

    return sending
