"""The HTTP error envelope of the Context Engine spec, shared by the security middleware and the REST facade:
``{"error": {"code", "message", "detail", "correlation_id", "retryable"}}`` (+ ``retry_after`` on 429, a whole
number of seconds, and ``details`` when there is more to say).

``code`` is the spec's category for the HTTP status (``VALIDATION_ERROR``, ``AUTHENTICATION_ERROR``...).
``detail`` is a sentence, as the spec types it (a string: the fields refused and why, else the message). The
tool-level code (``sanitization_failed``, ``rate_limit_exceeded``...) and the structured details of the error
(``errors`` with each field refused, ``retry_after``, ``reason``...) go in ``details``, an addition of the gateway
that clients written against the spec may ignore.

On the MCP endpoint :mod:`gateway.http_jsonrpc` carries the envelope's error inside a JSON-RPC error response
(same status, JSON-RPC code from :func:`jsonrpc_code`), which MCP clients can read.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

import structlog
from starlette.responses import JSONResponse, Response

from gateway.api.errors import ToolError

log = structlog.get_logger(__name__)

STATUS_CODES = {
    400: "VALIDATION_ERROR",
    401: "AUTHENTICATION_ERROR",
    403: "AUTHORIZATION_ERROR",
    404: "NOT_FOUND_ERROR",
    405: "METHOD_NOT_ALLOWED",
    406: "NOT_ACCEPTABLE",
    409: "CONFLICT_ERROR",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    421: "MISDIRECTED_REQUEST",
    422: "UNPROCESSABLE_ERROR",
    429: "RATE_LIMIT_ERROR",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE",
}

JSONRPC_INVALID_REQUEST = -32600
JSONRPC_INTERNAL_ERROR = -32603
JSONRPC_UNAUTHENTICATED = -32011
"""Implementation-defined server error (JSON-RPC reserves -32000..-32099): credentials missing or refused (401)."""
JSONRPC_FORBIDDEN = -32013
"""Implementation-defined server error: the caller may not do this (403: a scope, or a forbidden Origin)."""

JSONRPC_RATE_LIMITED = -32029
"""Implementation-defined server error: too many requests (429; ``data.retry_after`` says when to retry)."""

_JSONRPC_CODES = {
    401: JSONRPC_UNAUTHENTICATED,
    403: JSONRPC_FORBIDDEN,
    429: JSONRPC_RATE_LIMITED,
}


def jsonrpc_code(status: int) -> int:
    """The JSON-RPC error code for a refusal at HTTP ``status``: a malformed or unacceptable request (4xx) is
    ``-32600`` Invalid Request, except the implementation-defined codes for 401, 403 and 429; 5xx is ``-32603``."""
    if status in _JSONRPC_CODES:
        return _JSONRPC_CODES[status]
    return JSONRPC_INVALID_REQUEST if 400 <= status < 500 else JSONRPC_INTERNAL_ERROR


def error_body(
    status: int,
    message: str,
    *,
    detail: str | None = None,
    details: Mapping[str, Any] | None = None,
    correlation_id: str | None = None,
    retryable: bool | None = None,
    retry_after: float | None = None,
) -> dict[str, Any]:
    """The envelope's inner ``error`` object (``detail`` defaults to what ``details`` says, else ``message``)."""
    error: dict[str, Any] = {
        "code": STATUS_CODES.get(status, "INTERNAL_ERROR"),
        "message": message,
        "detail": detail if detail is not None else _sentence(message, details),
        "correlation_id": correlation_id or uuid.uuid4().hex,
        "retryable": status in (429, 503) if retryable is None else retryable,
    }
    if details:
        error["details"] = dict(details)
    if retry_after is not None:
        error["retry_after"] = whole_seconds(retry_after)
    return error


def whole_seconds(seconds: float) -> int:
    """A wait as ``Retry-After`` gives it: whole seconds, rounded up (never earlier than the limiter said), ≥ 1."""
    return max(1, math.ceil(seconds))


def _sentence(message: str, details: Mapping[str, Any] | None) -> str:
    """The fields an error refused and why (at most three), else its message."""
    errors = (details or {}).get("errors")
    if isinstance(errors, list):
        named = [
            f"{e['field']}: {e['message']}" for e in errors if isinstance(e, dict) and {"field", "message"} <= e.keys()
        ]
        if named:
            return "; ".join(named[:3]) + (f" (and {len(named) - 3} more)" if len(named) > 3 else "")
    return message


def error_envelope(
    status: int,
    message: str,
    *,
    detail: str | None = None,
    details: Mapping[str, Any] | None = None,
    correlation_id: str | None = None,
    retryable: bool | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """The error response for ``status``: the envelope, with ``X-Correlation-ID`` (and ``Retry-After``)."""
    error = error_body(
        status,
        message,
        detail=detail,
        details=details,
        correlation_id=correlation_id,
        retryable=retryable,
        retry_after=retry_after,
    )
    out_headers = dict(headers or {})
    out_headers["X-Correlation-ID"] = error["correlation_id"]
    if retry_after is not None:
        out_headers["Retry-After"] = str(error["retry_after"])
    return JSONResponse({"error": error}, status_code=status, headers=out_headers)


def refused(status: int, message: str, *, path: str | None = None, **fields: Any) -> JSONResponse:
    """:func:`error_envelope`, logged by :func:`log_refusal`."""
    return log_refusal(error_envelope(status, message, **fields), path=path, reason=message)


def log_refusal(response: Response, *, path: str | None, **fields: Any) -> Any:
    """Log ``response`` (a refusal) as ``request refused`` with its status and correlation id, so every refusal a
    caller can quote by its ``X-Correlation-ID`` is found in the log; returns it."""
    log.info(
        "request refused",
        status=response.status_code,
        path=path,
        correlation_id=response.headers.get("X-Correlation-ID"),
        **fields,
    )
    return response


def tool_error_detail(err: ToolError) -> dict[str, Any]:
    """The envelope's ``details`` for a :class:`ToolError`: its own code, then its details."""
    return {"code": err.code, **err.details}


def tool_error_response(
    err: ToolError,
    correlation_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    """``err`` at its HTTP status; a 429 carries ``retry_after`` (body) and ``Retry-After`` (header)."""
    retry_after = err.details.get("retry_after") if err.http_status == 429 else None
    return error_envelope(
        err.http_status,
        err.message,
        details=tool_error_detail(err),
        correlation_id=correlation_id,
        retryable=err.retryable,
        retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
        headers=headers,
    )
