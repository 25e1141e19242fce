"""The REST facade at ``/api/v1``: every tool as ``POST /api/v1/tools/{name}``, plus an OpenAPI 3.1 document
generated from the same pydantic models that give MCP its schemas."""

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
from gateway.api.rate_limits import RateDecision
from gateway.http_errors import STATUS_CODES, error_envelope, tool_error_response
from gateway.runtime import GatewayRuntime, UnknownTool

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


def rest_routes(runtime: GatewayRuntime) -> list[BaseRoute]:
    async def list_tools(request: Request) -> JSONResponse:
        principal = _principal(runtime, request)
        return JSONResponse(
            {
                "tools": [
                    {
                        "name": s.name,
                        "description": s.tool.description,
                        "scope": s.tool.scope,
                        "input_schema": s.tool.input_model.model_json_schema(),
                        "output_schema": s.tool.output_model.model_json_schema(mode="serialization"),
                    }
                    for s in runtime.visible_tools(principal)
                ]
            }
        )

    async def call_tool(request: Request) -> Response:
        name = request.path_params["name"]
        context = runtime.new_context(
            principal=_principal(runtime, request), transport="rest", headers=dict(request.headers)
        )
        if name not in runtime.tools:
            return error_envelope(404, f"no tool named {name!r}", correlation_id=context.correlation_id)
        raw = await request.body()
        try:
            arguments = json.loads(raw) if raw.strip() else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error_envelope(400, f"the body is not valid JSON: {exc}", correlation_id=context.correlation_id)
        if not isinstance(arguments, dict):
            return error_envelope(400, "the body must be a JSON object", correlation_id=context.correlation_id)
        try:
            outcome = await runtime.call_tool(name, arguments, context)
        except UnknownTool:
            return error_envelope(404, f"no tool named {name!r}", correlation_id=context.correlation_id)
        headers = {"X-Correlation-ID": context.correlation_id, **_rate_headers(context.state)}
        if outcome.error is not None:
            return tool_error_response(outcome.error, context.correlation_id, headers)
        return JSONResponse(outcome.body, headers=headers)

    async def openapi(request: Request) -> JSONResponse:
        return JSONResponse(openapi_document(runtime))

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


def openapi_document(runtime: GatewayRuntime) -> dict[str, Any]:
    """OpenAPI 3.1 for every served tool, schemas from the tools' own models."""
    models: list[tuple[type[BaseModel], Any]] = [(ErrorEnvelope, "serialization")]
    for served in runtime.tools.values():
        models += [(served.tool.input_model, "validation"), (served.tool.output_model, "serialization")]
    refs, schema = models_json_schema(models, ref_template="#/components/schemas/{model}")
    components = schema.get("$defs", {})
    error_ref = refs[(ErrorEnvelope, "serialization")]
    error_response = {"content": {"application/json": {"schema": error_ref}}}
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
                    "401": {"description": "Unauthenticated", **error_response},
                },
            }
        },
    }
    for name, served in runtime.tools.items():
        tool = served.tool
        responses: dict[str, Any] = {
            "200": {
                "description": "The tool's result",
                "headers": rate_headers,
                "content": {"application/json": {"schema": refs[(tool.output_model, "serialization")]}},
            }
        }
        for status in (400, 401, 403, 404, 413, 422, 429, 500, 503):
            responses[str(status)] = {"description": STATUS_CODES[status], **error_response}
        paths[f"{PREFIX}/tools/{name}"] = {
            "post": {
                "operationId": name,
                "summary": (tool.description or name).strip().splitlines()[0],
                "description": tool.description,
                "tags": [served.pack],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": refs[(tool.input_model, "validation")]}},
                },
                "responses": responses,
                **({"x-required-scope": tool.scope} if tool.scope else {}),
            }
        }
    security_schemes = {
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"{runtime.name} REST facade",
            "version": __version__,
            "description": f"Generated {datetime.now(UTC).date().isoformat()} from the tools' pydantic models.",
        },
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": security_schemes},
        "security": [{"bearer": []}, {"apiKey": []}, {}],
    }
