"""The REST facade at ``/api/v1``: every tool as ``POST /api/v1/tools/{name}``, the caller's tools at
``GET /api/v1/tools``, and an OpenAPI 3.1 document generated from the same pydantic models that give MCP its
schemas (a tool declared with JSON Schemas, such as a remote server's, brings its own), with the security schemes
the configured authenticator accepts.

Every route sits behind :class:`gateway.http_security.SecurityMiddleware`; the caller's principal is on
``request.state``. Errors use the envelope of :mod:`gateway.http_errors`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from gateway import __version__
from gateway.api.context import Principal
from gateway.api.errors import ToolError
from gateway.api.rate_limits import RateDecision
from gateway.http_auth import HttpAuth
from gateway.http_errors import STATUS_CODES, error_envelope, tool_error_response
from gateway.http_security import scope_refusal
from gateway.runtime import GatewayRuntime, ServedTool, UnknownTool

PREFIX = "/api/v1"


def _principal(runtime: GatewayRuntime, request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    return principal or runtime.default_principal  # type: ignore[return-value]


def _rate_headers(state: dict[str, Any]) -> dict[str, str]:
    decision = state.get("rate_limit")
    if not isinstance(decision, RateDecision):
        return {}
    return {
        "X-RateLimit-Limit": str(decision.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
        "X-RateLimit-Reset": str(int(decision.reset_at.replace(tzinfo=decision.reset_at.tzinfo or UTC).timestamp())),
    }


def _is_json(content_type: str | None) -> bool:
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def rest_routes(runtime: GatewayRuntime, auth: HttpAuth) -> list[BaseRoute]:
    def challenge(err: ToolError) -> dict[str, str]:
        value = auth.authenticator.challenge(err) if auth.authenticator is not None else None
        return {"WWW-Authenticate": value} if value else {}

    async def list_tools(request: Request) -> JSONResponse:
        principal = _principal(runtime, request)
        return JSONResponse(
            {
                "tools": [
                    {
                        "name": s.name,
                        "description": s.tool.description,
                        "scope": s.tool.scope,
                        "input_schema": s.input_schema,
                        "output_schema": s.output_schema,
                    }
                    for s in runtime.visible_tools(principal)
                ]
            }
        )

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        principal = _principal(runtime, request)
        context = runtime.new_context(principal=principal, transport="rest", headers=dict(request.headers))
        cid = context.correlation_id
        if name not in runtime.tools:
            return error_envelope(404, f"no tool named {name!r}", correlation_id=cid)
        denied = scope_refusal(runtime, name, principal)
        if denied is not None:
            return tool_error_response(denied, cid, challenge(denied))
        raw = await request.body()
        if raw.strip() and not _is_json(request.headers.get("content-type")):
            return error_envelope(415, "the body must be sent as application/json", correlation_id=cid)
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error_envelope(400, f"the body is not valid JSON: {exc}", correlation_id=cid)
        if not isinstance(arguments, dict):
            return error_envelope(400, "the body must be a JSON object", correlation_id=cid)
        try:
            outcome = await runtime.call_tool(name, arguments, context)
        except UnknownTool:
            return error_envelope(404, f"no tool named {name!r}", correlation_id=cid)
        headers = {"X-Correlation-ID": cid, **_rate_headers(context.state)}
        if outcome.error is not None:
            if outcome.error.http_status == 403:
                headers.update(challenge(outcome.error))
            return tool_error_response(outcome.error, cid, headers)
        return JSONResponse(outcome.body, headers=headers)

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(openapi_document(runtime, auth, _principal(runtime, request)))

    return [
        Route(f"{PREFIX}/tools", list_tools, methods=["GET"]),
        Route(f"{PREFIX}/tools/{{name}}", call_tool, methods=["POST"]),
        Route(f"{PREFIX}/openapi.json", openapi, methods=["GET"]),
    ]


class ErrorBody(BaseModel):
    code: str
    message: str
    detail: Any = None
    correlation_id: str
    retryable: bool
    retry_after: float | None = None


class ErrorEnvelope(BaseModel):
    error: ErrorBody


def security_schemes(auth: HttpAuth) -> dict[str, dict[str, Any]]:
    """OpenAPI security schemes for the challenges the authenticator sends (none when auth is off)."""
    schemes: dict[str, dict[str, Any]] = {}
    for challenge in auth.challenges:
        scheme = challenge.scheme.lower()
        if scheme == "bearer":
            schemes["bearer"] = {"type": "http", "scheme": "bearer"}
            if auth.issuers:
                schemes["bearer"]["bearerFormat"] = "JWT"
                schemes["bearer"]["description"] = "An access token from " + ", ".join(auth.issuers)
        elif scheme == "apikey" and challenge.params.get("header"):
            schemes["apiKey"] = {"type": "apiKey", "in": "header", "name": challenge.params["header"]}
        else:
            schemes[scheme] = {"type": "http", "scheme": scheme}
    return schemes


def _responses(statuses: tuple[int, ...], error_response: dict[str, Any], secured: bool) -> dict[str, Any]:
    challenge = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "How to authenticate"}}
    responses: dict[str, Any] = {}
    for status in statuses:
        if status in (401, 403) and not secured:
            continue
        response = {"description": STATUS_CODES[status], **error_response}
        if status in (401, 403):
            response["headers"] = challenge
        if status == 429:
            response["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait"}}
        responses[str(status)] = response
    return responses


def _schemas(served: ServedTool, refs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The request and response body schemas of a tool: references to its models, or its own JSON Schemas (a
    tool without an output schema answers with MCP's ``{"content", "isError"}`` shape)."""
    tool = served.tool
    if tool.input_model is not None:
        return refs[(tool.input_model, "validation")], refs[(tool.output_model, "serialization")]
    content = {"type": "object", "properties": {"content": {"type": "array"}, "isError": {"type": "boolean"}}}
    return served.input_schema, served.output_schema or content


def openapi_document(
    runtime: GatewayRuntime, auth: HttpAuth | None = None, principal: Principal | None = None
) -> dict[str, Any]:
    """OpenAPI 3.1 for the tools ``principal`` may call (all when None), schemas from the tools' own models.

    Each operation lists the configured security schemes with the scope the tool needs (OpenAPI 3.1 allows
    role names for non-OAuth schemes) and ``x-required-scope``.
    """
    auth = auth or HttpAuth(None)
    served_tools = runtime.visible_tools(principal) if principal is not None else list(runtime.tools.values())
    schemes = security_schemes(auth)
    models: list[tuple[type[BaseModel], Any]] = [(ErrorEnvelope, "serialization")]
    for served in served_tools:
        if served.tool.input_model is not None and served.tool.output_model is not None:
            models += [(served.tool.input_model, "validation"), (served.tool.output_model, "serialization")]
    refs, schema = models_json_schema(models, ref_template="#/components/schemas/{model}")
    error_response = {"content": {"application/json": {"schema": refs[(ErrorEnvelope, "serialization")]}}}
    rate_headers = {
        name: {"schema": {"type": "integer"}, "description": description}
        for name, description in (
            ("X-RateLimit-Limit", "Requests allowed in the window"),
            ("X-RateLimit-Remaining", "Requests left in the window"),
            ("X-RateLimit-Reset", "Unix time when the window resets"),
        )
    }
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Liveness",
                "security": [],
                "responses": {"200": {"description": "The gateway is up"}},
            }
        },
        f"{PREFIX}/tools": {
            "get": {
                "operationId": "list_tools",
                "summary": "The tools the caller may call",
                "responses": {
                    "200": {"description": "Tools with their schemas"},
                    **_responses((401,), error_response, bool(schemes)),
                },
            }
        },
    }
    for served in served_tools:
        tool = served.tool
        in_schema, out_schema = _schemas(served, refs)
        responses: dict[str, Any] = {
            "200": {
                "description": "The tool's result",
                "headers": rate_headers,
                "content": {"application/json": {"schema": out_schema}},
            },
            **_responses((400, 401, 403, 404, 413, 415, 422, 429, 500, 503), error_response, bool(schemes)),
        }
        operation: dict[str, Any] = {
            "operationId": served.name,
            "summary": (tool.description or served.name).strip().splitlines()[0],
            "description": tool.description,
            "tags": [served.pack],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": in_schema}},
            },
            "responses": responses,
        }
        if tool.scope:
            operation["x-required-scope"] = tool.scope
            if schemes:
                operation["security"] = [{name: [tool.scope]} for name in schemes]
        paths[f"{PREFIX}/tools/{served.name}"] = {"post": operation}
    components: dict[str, Any] = {"schemas": schema.get("$defs", {})}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": f"{runtime.name} REST facade",
            "version": __version__,
            "description": f"Generated {datetime.now(UTC).date().isoformat()} from the tools' pydantic models.",
        },
        "paths": paths,
        "components": components,
    }
    public_url = runtime.loaded.config.transport.public_url
    if public_url:
        document["servers"] = [{"url": public_url.rstrip("/")}]
    if schemes:
        components["securitySchemes"] = schemes
        document["security"] = [{name: []} for name in schemes]
    return document
