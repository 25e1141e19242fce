"""Serving one contributed :class:`gateway.api.RestRoute`: scope, bucket, input, handler, response.

Order for each request (after :mod:`gateway.http_security` admitted it): the route's scope (403
``AUTHORIZATION_ERROR``) → a token from the route's bucket (429 ``RATE_LIMIT_ERROR``; ``X-RateLimit-*`` on every
response of a limited route from here on) → path, query and body validated into the route's ``input_model`` (400
``VALIDATION_ERROR`` naming each field and where it was read from; 415 for a body that is not JSON) → the handler
→ the ``output_model`` checked and rendered at the route's status. A :class:`gateway.api.ToolError` the handler
raises is rendered at its status; anything else is logged with its traceback and answered 500 with the
correlation id only.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import structlog
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from gateway.api.context import CallContext, Principal
from gateway.api.errors import ConfigError, Forbidden, InternalError, ToolError, ValidationFailed
from gateway.api.rest import BODY_METHODS, RestRoute
from gateway.asgi_body import ClientGone, until_disconnected
from gateway.http_errors import tool_error_response
from gateway.http_security import ANONYMOUS
from gateway.logs import enter_call, exit_call
from gateway.pipeline import tool_error_in
from gateway.rest_limits import RouteLimits, rate_limit_headers, rate_limited
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

Location = Literal["path", "query", "body"]
Challenge = Callable[[ToolError | None], dict[str, str]]
"""The ``WWW-Authenticate`` header for a refusal (``None``: the bare challenge of the configured authentication)."""


def is_json(content_type: str | None) -> bool:
    """``application/json`` or an ``application/*+json`` media type."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _is_array(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "array" or any(_is_array(option) for option in schema.get("anyOf", ()))


@dataclass(frozen=True)
class RouteInput:
    """Where each field of a route's ``input_model`` is read from (see :mod:`gateway.api.rest`)."""

    locations: dict[str, Location]
    arrays: frozenset[str] = field(default_factory=frozenset)
    """Query fields that take repeated values."""
    rest: Location = "body"
    """Where the fields not named in the path come from (and unknown ones were sent)."""

    @classmethod
    def of(cls, route: RestRoute, owner: str, source: str) -> RouteInput:
        schema = route.input_model.model_json_schema()
        properties: dict[str, Any] = schema.get("properties", {})
        missing = [name for name in route.path_parameters if name not in properties]
        if missing:
            raise ConfigError(
                f"{source}: {owner}: REST route {route.method} {route.path}: path parameter(s) "
                f"{', '.join(missing)} are not fields of {route.input_model.__name__}"
            )
        other: Location = "body" if route.method in BODY_METHODS else "query"
        locations: dict[str, Location] = {
            name: "path" if name in route.path_parameters else other for name in properties
        }
        arrays = frozenset(
            name for name, where in locations.items() if where == "query" and _is_array(properties[name])
        )
        return cls(locations, arrays, other)

    def fields(self, where: Location) -> list[str]:
        return [name for name, location in self.locations.items() if location == where]

    async def read(self, route: RestRoute, request: Request) -> BaseModel:
        """The validated input; :class:`ValidationFailed` (400) or a 415 :class:`ToolError` otherwise."""
        data: dict[str, Any] = dict(request.path_params)
        query = request.query_params
        if route.method in BODY_METHODS:
            if query:
                names = ", ".join(sorted(set(query.keys())))
                raise _invalid([{"field": names, "in": "query", "message": "this operation takes no query parameters"}])
            data.update(await self._body(request))
        else:
            for name in query:
                values = query.getlist(name)
                if name in self.arrays:
                    data[name] = values
                elif len(values) > 1:
                    raise _invalid([{"field": name, "in": "query", "message": "given more than once"}])
                else:
                    data[name] = values[0]
        try:
            return route.input_model.model_validate(data)
        except ValidationError as exc:
            raise _invalid(
                [
                    {
                        "field": ".".join(str(part) for part in err["loc"]) or "(body)",
                        "in": self.locations.get(str(err["loc"][0]) if err["loc"] else "", self.rest),
                        "message": err["msg"],
                        "type": err["type"],
                    }
                    for err in exc.errors(include_url=False)
                ]
            ) from None

    async def _body(self, request: Request) -> dict[str, Any]:
        raw = await request.body()
        if not raw.strip():
            return {}
        if not is_json(request.headers.get("content-type")):
            raise ToolError("the body must be sent as application/json", code="unsupported_media_type", http_status=415)
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise _invalid([{"field": "(body)", "in": "body", "message": f"not valid JSON: {exc}"}]) from None
        if not isinstance(body, dict):
            raise _invalid([{"field": "(body)", "in": "body", "message": "the body must be a JSON object"}])
        clashing = sorted(name for name in body if self.locations.get(name) == "path")
        if clashing:
            raise _invalid([{"field": name, "in": "body", "message": "this is a path parameter"} for name in clashing])
        return body


def _invalid(errors: list[dict[str, Any]]) -> ValidationFailed:
    summary = "; ".join(f"{e['field']} ({e['in']}): {e['message']}" for e in errors)
    return ValidationFailed(f"invalid request: {summary}", details={"errors": errors})


class ServedRoute:
    """A contributed route as the host serves it (an endpoint taking a Starlette ``Request``)."""

    def __init__(
        self,
        runtime: GatewayRuntime,
        owner: str,
        route: RestRoute,
        limits: RouteLimits,
        challenge: Challenge,
    ) -> None:
        self.runtime = runtime
        self.owner = owner
        self.tag = owner.split("'")[1] if "'" in owner else owner
        """The pack's (or provider's) name, which groups its operations in the OpenAPI document."""
        self.route = route
        self.input = RouteInput.of(route, owner, runtime.loaded.source)
        self.rule = limits.rule(route)
        self._limits = limits
        self._challenge = challenge

    async def __call__(self, request: Request) -> Response:
        started = time.perf_counter()
        principal = getattr(request.state, "principal", None) or self.runtime.default_principal or ANONYMOUS
        context = self.runtime.new_context(
            principal=principal, transport="rest", headers=dict(request.headers), tool_name=self.route.name
        )
        headers = {"X-Correlation-ID": context.correlation_id}  # and X-RateLimit-* once a token is taken
        try:
            response = await self._serve(request, context, headers)
        except ClientGone:
            response = Response(status_code=499)  # cancelled: the client hung up, nobody is there to answer
        except Exception as exc:
            response = self._error(exc, context.correlation_id, headers)
        log.info(
            "rest call",
            operation=self.route.name,
            status=response.status_code,
            principal=principal.key,
            correlation_id=context.correlation_id,
            ms=round((time.perf_counter() - started) * 1000, 2),
        )
        return response

    async def _serve(self, request: Request, context: CallContext, headers: dict[str, str]) -> Response:
        route = self.route
        if not route.public and not context.principal.allows(route.scope):
            raise Forbidden(
                f"the caller lacks the scope {route.scope!r} required by {route.method} {route.path}",
                details={"scope": route.scope},
            )
        if self.rule is not None:
            decision = await self._limits.take(self.rule, _bucket_key(context.principal, request))
            context.state["rate_limit"] = decision
            headers.update(rate_limit_headers(decision))
            if not decision.allowed:
                return rate_limited(decision, context.correlation_id)
        args = await self.input.read(route, request)
        token = enter_call(context.correlation_id, route.name)
        try:
            result = await until_disconnected(request.receive, lambda: route.handler(args, context))
        finally:
            exit_call(token)
        return self._render(result, headers)

    def _render(self, result: Any, headers: dict[str, str]) -> Response:
        route = self.route
        if route.output_model is None:
            if result is not None:
                raise InternalError(f"{route.method} {route.path} answers no content, but its handler returned a value")
            return Response(status_code=204, headers=headers)
        try:
            model = result if isinstance(result, route.output_model) else route.output_model.model_validate(result)
        except ValidationError as exc:
            log.error("REST handler returned output that does not match its model", errors=exc.errors())
            raise InternalError("the operation produced an invalid result") from None
        body = model.model_dump(mode="json", by_alias=True, exclude_none=route.exclude_none)
        return JSONResponse(body, status_code=route.status, headers=headers)

    def _error(self, exc: Exception, cid: str, headers: dict[str, str]) -> Response:
        err = tool_error_in(exc)
        if err is None:
            log.exception("REST handler failed", operation=self.route.name, correlation_id=cid)
            err = InternalError(
                "internal error; the server log has the details under this correlation id",
                details={"correlation_id": cid},
            )
        if err.http_status in (401, 403) and not self.route.public:
            headers = {**headers, **self._challenge(err)}
        elif err.http_status == 401:  # a public route refused what the body carried (a refresh token), not the
            headers = {**headers, **self._challenge(None)}  # request's credentials: still a challenge (RFC 9110)
        return tool_error_response(err, cid, headers)


def _bucket_key(principal: Principal, request: Request) -> str:
    if principal.method == ANONYMOUS.method:
        return f"anonymous@{request.client.host if request.client else 'unknown'}"
    return principal.key


def shape(path: str) -> str:
    """A path with its parameters blanked (``/a/{}/b``): two routes of one shape would shadow each other."""
    return re.sub(r"\{\w+\}", "{}", path)
