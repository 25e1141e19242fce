"""The HTTP error envelope (Context Engine spec): ``{"error": {"code", "message", "detail", "correlation_id",
"retryable"}}``, shared by the auth middleware and the REST facade."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from starlette.responses import JSONResponse

from gateway.api.errors import ToolError


def error_envelope(
    status: int,
    code: str,
    message: str,
    *,
    detail: Any = None,
    correlation_id: str | None = None,
    retryable: bool = False,
    headers: Mapping[str, str] | None = None,
) -> JSONResponse:
    body = {
        "error": {
            "code": code,
            "message": message,
            "detail": detail,
            "correlation_id": correlation_id or uuid.uuid4().hex,
            "retryable": retryable,
        }
    }
    return JSONResponse(body, status_code=status, headers=dict(headers or {}))


def tool_error_response(err: ToolError, correlation_id: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    return error_envelope(
        err.http_status,
        err.code,
        err.message,
        detail=err.details or None,
        correlation_id=correlation_id,
        retryable=err.retryable,
        headers=headers,
    )
