"""One call's result as the transports render it, and the checks between a handler's return and the client.

Model tools answer with their output model, validated and dumped; JSON Schema tools answer with a
:class:`gateway.api.ToolResult` (content blocks passed through) or a mapping, whose structured content is checked
against the tool's output schema. Either way arguments that break the input schema fail with
``validation_error`` naming each field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from gateway.api.context import CallContext
from gateway.api.errors import (
    Forbidden,
    GatewayError,
    InternalError,
    ProviderUnavailable,
    ServiceUnavailable,
    ToolError,
    ValidationFailed,
)
from gateway.api.tools import Tool, ToolResult
from gateway.catalogue import ServedTool
from gateway.json_schemas import schema_errors

__all__ = [
    "CallOutcome",
    "UnknownTool",
    "checked_output",
    "encoded_error",
    "encoded_result",
    "invalid_arguments",
    "lacks_scope",
    "non_json_fields",
    "schema_outcome",
    "unavailable",
    "validation_details",
]

log = structlog.get_logger(__name__)


class UnknownTool(GatewayError):
    """No served tool has this name (a protocol error, not a tool result). ``reason``: why, when a pack knows (the
    remote server whose prefix the name has is down, its tools not known)."""

    def __init__(self, name: str, reason: str | None = None) -> None:
        super().__init__(f"Unknown tool: {name}" + (f" ({reason})" if reason else ""))
        self.name, self.reason = name, reason


@dataclass(frozen=True)
class CallOutcome:
    """A rendered tool result: the JSON body, its text form, and the error if it failed.

    ``content`` holds the MCP content blocks of a tool that returned a :class:`ToolResult` (served as they are,
    with ``structured`` as the structured content); otherwise a client gets ``text`` as one text block and
    ``body`` as the structured content.
    """

    is_error: bool
    body: dict[str, Any]
    text: str
    error: ToolError | None = None
    context: CallContext | None = None
    content: Sequence[Mapping[str, Any]] | None = None
    structured: Mapping[str, Any] | None = None


def validation_details(exc: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in err["loc"]) or "(root)", "message": err["msg"], "type": err["type"]}
        for err in exc.errors(include_url=False)
    ]


def unavailable(exc: ProviderUnavailable, correlation_id: str) -> ServiceUnavailable:
    """What a caller is told when a provider is down or locked: which one, and to retry; the reason (host names,
    paths) stays in the server log under the correlation id."""
    return ServiceUnavailable(
        f"{exc.provider} is unavailable right now; retry later (the server log has the reason under this correlation "
        "id)",
        details={"provider": exc.provider, "correlation_id": correlation_id},
    )


def invalid_arguments(errors: list[dict[str, str]]) -> ValidationFailed:
    summary = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
    return ValidationFailed(f"invalid arguments: {summary}", details={"errors": errors})


def lacks_scope(scope: str | None, tool_name: str) -> Forbidden:
    return Forbidden(f"the caller lacks the scope {scope!r} required by {tool_name}", details={"required_scope": scope})


def checked_output(tool: Tool[Any, Any], result: Any) -> BaseModel:
    """The model tool's result as its output model; ``internal_error`` when it does not fit."""
    model = tool.output_model
    assert model is not None
    if isinstance(result, model):
        return result
    try:
        if isinstance(result, BaseModel):
            result = result.model_dump()
        return model.model_validate(result)
    except ValidationError as exc:
        log.error("tool returned output that does not match its model", tool=tool.name, errors=exc.errors())
        raise InternalError(
            "the tool produced an invalid result",
            details={"errors": [e["field"] for e in validation_details(exc)]},
        ) from None


def schema_outcome(served: ServedTool, result: Any, context: CallContext) -> CallOutcome:
    """Render what a JSON Schema tool returned: a :class:`ToolResult` passes through, a mapping is the structured
    result; structured content is checked against the output schema (not that of an ``is_error`` result)."""
    if isinstance(result, ToolResult):
        structured, content, is_error = result.structured, result.content, result.is_error
    elif isinstance(result, Mapping):
        structured, content, is_error = result, None, False
    else:
        log.error("tool returned neither a ToolResult nor a mapping", tool=served.name, type=type(result).__name__)
        raise InternalError("the tool produced an invalid result")
    if not is_error and served.output_validator is not None:
        errors = schema_errors(served.output_validator, structured) if structured is not None else []
        if structured is None or errors:
            log.error("tool result does not match its output schema", tool=served.name, errors=errors)
            fields = [e["field"] for e in errors] or ["structuredContent"]
            if upstream := served.tool.upstream:  # the remote server's own schema: its answer is at fault
                raise ToolError(
                    f"upstream server {upstream!r} answered with a result its own output schema refuses",
                    code="upstream_error",
                    http_status=502,
                    details={"upstream": upstream, "errors": fields},
                )
            raise InternalError("the tool produced an invalid result", details={"errors": fields})
    if structured is not None and not is_error:
        body = dict(structured)
    else:
        body = {"content": [dict(block) for block in content or ()], "isError": is_error}
    return CallOutcome(is_error, body, encoded_result(served, body), None, context, content, structured)


def encoded_result(served: ServedTool, body: Mapping[str, Any]) -> str:
    """``body`` as JSON text; ``internal_error`` naming the fields JSON cannot carry (NaN, infinity, a Python
    object a handler left in it)."""
    try:
        return served.encoder.encode(body)
    except (TypeError, ValueError):
        fields = non_json_fields(body)
        log.error("tool result holds values JSON cannot carry", tool=served.name, fields=fields)
        raise InternalError("the tool produced an invalid result", details={"errors": fields}) from None


def encoded_error(served: ServedTool, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """An error body and its JSON text. Values of its details JSON cannot carry (a datetime, a set, NaN) are sent
    as their ``str()``: the caller still gets the tool's error, and the log names the fields."""
    try:
        return body, served.encoder.encode(body)
    except (TypeError, ValueError):
        log.error(
            "tool error holds values JSON cannot carry; sent as text", tool=served.name, fields=non_json_fields(body)
        )
        safe = _json_safe(body)
        return safe, served.encoder.encode(safe)


def non_json_fields(value: Any, path: str = "") -> list[str]:
    """Dotted paths of the values in ``value`` that are not JSON (NaN and infinities included)."""
    if value is None or isinstance(value, str | bool | int):
        return []
    if isinstance(value, float):
        return [] if math.isfinite(value) else [path or "(root)"]
    if isinstance(value, Mapping):
        found: list[str] = []
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            found += non_json_fields(item, where) if isinstance(key, str) else [where]
        return found
    if isinstance(value, list | tuple):
        return [field for i, item in enumerate(value) for field in non_json_fields(item, f"{path}[{i}]")]
    return [path or "(root)"]


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(key): _json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(item) for item in value]
    return str(value)
