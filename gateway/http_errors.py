"""The HTTP error envelope of the Context Engine spec, shared by the auth middleware and the REST facade:
``{"error": {"code", "message", "detail", "correlation_id", "retryable"}}`` (+ ``retry_after`` on 429).

``code`` is the spec's category for the HTTP status (``VALIDATION_ERROR``, ``AUTHENTICATION_ERROR``...); the
tool-level code (``sanitization_failed``, ``rate_limit_exceeded``...) and its details go in ``detail``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from gateway.api.errors import ToolError

STATUS_CODES = {
    400: "VALIDATION_ERROR",
    401: "AUTHENTICATION_ERROR",
    403: "AUTHORIZATION_ERROR",
    404: "NOT_FOUND_ERROR",
    409: "CONFLICT_ERROR",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "UNPROCESSABLE_ERROR",
    429: "RATE_LIMIT_ERROR",
    500: "INTERNAL_ERROR",
    503: "SERVICE_UNAVAILABLE",
}


def error_envelope(
    status: int,
    message: str,
    *,
    detail: Any = None,
    correlation_id: str | None = None,
    retryable: bool | None = None,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    error: dict[str, Any] = {
        "code": STATUS_CODES.get(status, "INTERNAL_ERROR"),
        "message": message,
        "detail": detail,
        "correlation_id": correlation_id or uuid.uuid4().hex,
        "retryable": status in (429, 503) if retryable is None else retryable,
    }
    out_headers = dict(headers or {})
    out_headers["X-Correlation-ID"] = error["correlation_id"]
    if retry_after is not None:
        error["retry_after"] = retry_after
        out_headers["Retry-After"] = str(max(1, round(retry_after)))
    return JSONResponse({"error": error}, status_code=status, headers=out_headers)


def tool_error_response(err: ToolError, correlation_id: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    retry_after = err.details.get("retry_after") if err.http_status == 429 else None
    return error_envelope(
        err.http_status,
        err.message,
        detail={"code": err.code, **err.details},
        correlation_id=correlation_id,
        retryable=err.retryable,
        retry_after=float(retry_after) if isinstance(retry_after, int | float) else None,
        headers=headers,
    )
