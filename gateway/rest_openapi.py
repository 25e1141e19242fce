"""The OpenAPI 3.1 document of ``/api/v1`` (served at ``/api/v1/openapi.json``), generated from the pydantic models
the tools and the contributed REST routes declare, with the security schemes the configured authenticator accepts.

A caller sees the operations it may call: tools and routes whose scope it holds, and public routes.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from pydantic.json_schema import models_json_schema

from gateway import __version__
from gateway.api.context import Principal
from gateway.http_auth import HttpAuth
from gateway.http_errors import STATUS_CODES
from gateway.runtime import GatewayRuntime, ServedTool

if TYPE_CHECKING:
    from gateway.rest_routes import ServedRoute

PREFIX = "/api/v1"
Refs = dict[tuple[type[BaseModel], Any], dict[str, Any]]


class ErrorBody(BaseModel):
    code: str
    message: str
    detail: str = Field(description="What was wrong, in a sentence: the fields refused and why, else the message.")
    details: dict[str, Any] | None = Field(
        default=None,
        description="The same, structured: the tool-level `code`, `errors` (each field refused), `retry_after`...",
    )
    correlation_id: str
    retryable: bool
    retry_after: int | None = Field(default=None, description="Seconds to wait before retrying (429).")


class ErrorEnvelope(BaseModel):
    error: ErrorBody


RATE_HEADERS = {
    name: {"schema": {"type": "integer"}, "description": description}
    for name, description in (
        ("X-RateLimit-Limit", "Requests allowed in the window"),
        ("X-RateLimit-Remaining", "Requests left in the window"),
        ("X-RateLimit-Reset", "Unix time when the window resets"),
    )
}


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


def _responses(statuses: Sequence[int], error_response: dict[str, Any], secured: bool) -> dict[str, Any]:
    challenge = {"WWW-Authenticate": {"schema": {"type": "string"}, "description": "How to authenticate"}}
    responses: dict[str, Any] = {}
    for status in sorted(set(statuses)):
        if status in (401, 403) and not secured:
            continue
        response = {"description": STATUS_CODES[status], **error_response}
        if status in (401, 403):
            response["headers"] = challenge
        if status == 429:
            response["headers"] = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait"}}
        responses[str(status)] = response
    return responses


def _security(schemes: dict[str, Any], scope: str | None) -> list[dict[str, list[str]]]:
    """Each scheme with the scope (OpenAPI 3.1 allows role names for non-OAuth schemes)."""
    return [{name: [scope] if scope else []} for name in schemes]


def _tool_schemas(served: ServedTool, refs: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tool's request and response body schemas: references to its models, or its own JSON Schemas (a tool
    without an output schema answers with MCP's ``{"content", "isError"}`` shape)."""
    tool = served.tool
    if tool.input_model is not None:
        return refs[(tool.input_model, "validation")], refs[(tool.output_model, "serialization")]
    content = {"type": "object", "properties": {"content": {"type": "array"}, "isError": {"type": "boolean"}}}
    return served.input_schema, served.output_schema or content


def openapi_document(
    runtime: GatewayRuntime,
    auth: HttpAuth | None = None,
    principal: Principal | None = None,
    routes: Sequence[ServedRoute] = (),
) -> dict[str, Any]:
    """OpenAPI 3.1 for the tools and ``routes`` that ``principal`` may call (all when None)."""
    auth = auth or HttpAuth(None)
    served_tools = runtime.visible_tools(principal) if principal is not None else list(runtime.tools.values())
    visible = [s for s in routes if principal is None or s.route.public or principal.allows(s.route.scope)]
    schemes = security_schemes(auth)
    models: list[tuple[type[BaseModel], Any]] = [(ErrorEnvelope, "serialization")]
    for served in served_tools:
        if served.tool.input_model is not None and served.tool.output_model is not None:
            models += [(served.tool.input_model, "validation"), (served.tool.output_model, "serialization")]
    for item in visible:
        models.append((item.route.input_model, "validation"))
        if item.route.output_model is not None:
            models.append((item.route.output_model, "serialization"))
    refs, schema = models_json_schema(models, ref_template="#/components/schemas/{model}")
    components: dict[str, Any] = {"schemas": schema.get("$defs", {})}
    error_response = {"content": {"application/json": {"schema": refs[(ErrorEnvelope, "serialization")]}}}
    paths: dict[str, Any] = {
        "/health": {
            "get": {
                "operationId": "health",
                "summary": "Readiness: the relational stores the deployment opened answer",
                "security": [],
                "responses": {
                    "200": {"description": 'The gateway serves: `{"status": "ok"}`'},
                    "503": {"description": "A store does not answer: `status` unavailable, `unavailable` names it"},
                },
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
        in_schema, out_schema = _tool_schemas(served, refs)
        responses: dict[str, Any] = {
            "200": {
                "description": "The tool's result",
                "headers": RATE_HEADERS,
                "content": {"application/json": {"schema": out_schema}},
            },
            **_responses((400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503), error_response, bool(schemes)),
        }
        operation: dict[str, Any] = {
            "operationId": served.name,
            "summary": (tool.description or served.name).strip().splitlines()[0],
            "description": tool.description,
            "tags": [served.pack],
            "requestBody": {"required": True, "content": {"application/json": {"schema": in_schema}}},
            "responses": responses,
        }
        if tool.scope:
            operation["x-required-scope"] = tool.scope
            if schemes:
                operation["security"] = _security(schemes, tool.scope)
        if tool.scope_by is not None:  # the scope a call needs, by the value of one argument
            operation["x-scope-by-argument"] = {
                "argument": tool.scope_by.argument,
                "scopes": dict(tool.scope_by.scopes),
            }
        paths[f"{PREFIX}/tools/{served.name}"] = {"post": operation}
    for item in visible:
        path = paths.setdefault(PREFIX + item.route.path, {})
        path[item.route.method.lower()] = _route_operation(item, refs, components, error_response, schemes)
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": f"{runtime.name} REST API",
            "version": __version__,
            "description": f"Generated {datetime.now(UTC).date().isoformat()} from the pydantic models of the "
            "tools and routes.",
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


def _route_operation(
    item: ServedRoute, refs: Refs, components: dict[str, Any], error_response: dict[str, Any], schemes: dict[str, Any]
) -> dict[str, Any]:
    route = item.route
    input_ref = refs[(route.input_model, "validation")]
    input_schema = components["schemas"][input_ref["$ref"].rsplit("/", 1)[1]]
    properties: dict[str, Any] = input_schema.get("properties", {})
    required = set(input_schema.get("required", ()))
    parameters = []
    for name in item.input.fields("path") + item.input.fields("query"):
        where = item.input.locations[name]
        prop = dict(properties[name])
        parameter: dict[str, Any] = {
            "name": name,
            "in": where,
            "required": where == "path" or name in required,
            "schema": prop if where == "path" else _without_null(prop),
        }
        if "description" in prop:
            parameter["description"] = prop["description"]
        if name in item.input.arrays:
            parameter.update(style="form", explode=True)
        parameters.append(parameter)
    limited = item.rule is not None
    success: dict[str, Any] = {"description": route.summary}
    if limited:
        success["headers"] = RATE_HEADERS
    if route.output_model is not None:
        success["content"] = {"application/json": {"schema": refs[(route.output_model, "serialization")]}}
    errors = {400, 500, 503, *route.errors}
    if not route.public:
        errors |= {401, 403}
    if item.input.fields("path"):
        errors.add(404)
    if item.input.fields("body"):
        errors |= {413, 415}
    if limited:
        errors.add(429)
    operation: dict[str, Any] = {
        "operationId": route.name,
        "summary": route.summary,
        "tags": [item.tag],
        "responses": {str(route.status): success, **_responses(sorted(errors), error_response, bool(schemes))},
    }
    if route.description:
        operation["description"] = route.description
    if parameters:
        operation["parameters"] = parameters
    body_fields = item.input.fields("body")
    if body_fields:
        body_schema = input_ref
        if len(body_fields) != len(properties):  # path parameters too: the body is the rest of the model
            body_schema = _body_only(input_schema, body_fields)
            name = f"{route.name}_body"
            components["schemas"][name] = body_schema
            body_schema = {"$ref": f"#/components/schemas/{name}"}
        operation["requestBody"] = {
            "required": bool(required & set(body_fields)),
            "content": {"application/json": {"schema": body_schema}},
        }
    if route.public:
        operation["security"] = []
    else:
        if route.scope:
            operation["x-required-scope"] = route.scope
        if schemes:
            operation["security"] = _security(schemes, route.scope)
    if item.rule is not None:
        operation["x-rate-limit"] = {"limit": item.rule.limit, "period_seconds": item.rule.period_seconds}
    return operation


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A query parameter is absent or has a value: ``null`` is not something a query string can carry."""
    options = schema.get("anyOf")
    if not options:
        return schema
    kept = [option for option in options if option.get("type") != "null"]
    out = {key: value for key, value in schema.items() if key != "anyOf"}
    if "default" in out and out["default"] is None:
        del out["default"]
    return {**out, **kept[0]} if len(kept) == 1 else {**out, "anyOf": kept}


def _body_only(schema: dict[str, Any], fields: list[str]) -> dict[str, Any]:
    body = copy.deepcopy(schema)
    body["properties"] = {name: body["properties"][name] for name in fields}
    body["required"] = [name for name in schema.get("required", ()) if name in fields]
    if not body["required"]:
        del body["required"]
    body["title"] = f"{schema.get('title', 'Input')} (body)"
    return body
