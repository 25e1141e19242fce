"""Errors a tool, provider or interceptor raises to produce a structured failure.

The host turns every :class:`ToolError` into an ``isError`` tool result whose JSON body is, by default,
``{"error": {"code", "message", "details"}}`` (the GIM error format). A pack may render its own body by
overriding :meth:`gateway.api.ToolPack.format_error`. Any other exception is logged with its traceback and
reaches the client only as ``internal_error`` with the call's correlation id.
"""

from __future__ import annotations

from typing import Any


class GatewayError(Exception):
    """Base of every error the gateway defines."""


class ConfigError(GatewayError):
    """The configuration is invalid. The message names the file, the key and the problem."""


class PluginError(GatewayError):
    """A plugin could not be loaded, registered or started (name collisions, missing providers...)."""


class ProviderUnavailable(GatewayError):
    """A provider cannot serve right now (service down, key missing, store locked).

    Callers with a documented fallback (the embedder chain) catch it and move on; everyone else lets it
    surface as a clear error.
    """

    def __init__(self, provider: str, reason: str) -> None:
        super().__init__(f"{provider}: {reason}")
        self.provider = provider
        self.reason = reason


class ToolError(GatewayError):
    """A failure that the client should see, with a stable machine-readable ``code``."""

    code: str = "internal_error"
    http_status: int = 500
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        code: str | None = None,
        http_status: int | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status
        if retryable is not None:
            self.retryable = retryable

    def to_body(self) -> dict[str, Any]:
        """The default error body: ``{"error": {"code", "message", "details"}}``."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class ValidationFailed(ToolError):
    """Input (or output) did not match the tool's model. ``details["errors"]`` names each field."""

    code = "validation_error"
    http_status = 400


class NotFound(ToolError):
    code = "not_found"
    http_status = 404


class InsufficientData(ToolError):
    code = "insufficient_data"
    http_status = 400


class SanitizationFailed(ToolError):
    """A sanitizer could not make the content safe; the content must not be stored (fail closed)."""

    code = "sanitization_failed"
    http_status = 422


class RateLimitExceeded(ToolError):
    """A quota refused the call; ``details`` carries limit, remaining, reset_at and retry_after."""

    code = "rate_limit_exceeded"
    http_status = 429
    retryable = True


class Unauthenticated(ToolError):
    code = "unauthorized"
    http_status = 401


class Forbidden(ToolError):
    code = "forbidden"
    http_status = 403


class ServiceUnavailable(ToolError):
    """A dependency is down and there is no fallback left."""

    code = "service_unavailable"
    http_status = 503
    retryable = True


class InternalError(ToolError):
    code = "internal_error"
    http_status = 500
