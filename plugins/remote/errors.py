"""The errors a remote tool answers with when its server cannot: each names the server."""

from __future__ import annotations

from typing import Any

from gateway.api import ToolError


def upstream_unavailable(server: str, reason: str, *, state: str, retry_after: float | None = None) -> ToolError:
    """The server is down, not started in time, or its connection broke during the call."""
    details: dict[str, Any] = {"upstream": server, "state": state, "reason": reason}
    if retry_after is not None:
        details["retry_after"] = round(max(retry_after, 0.0), 3)
    return ToolError(
        f"upstream server {server!r} is unavailable: {reason}",
        code="upstream_unavailable",
        http_status=503,
        retryable=True,
        details=details,
    )


def upstream_timeout(server: str, seconds: float, *, queued: bool, queued_for: float = 0.0) -> ToolError:
    """The call did not finish within the server's ``call_timeout_seconds`` (it was cancelled upstream).

    ``queued``: it never got a free slot; ``queued_for``: the seconds it waited for the slot it got (told, with
    ``details.queued_seconds``, when they were a tenth of a second or more)."""
    where = "waiting for a free slot" if queued else "waiting for the answer"
    details: dict[str, Any] = {"upstream": server, "timeout_seconds": seconds, "queued": queued}
    if not queued and queued_for >= 0.1:
        where += f", after {queued_for:.1f} s queued for a free slot"
        details["queued_seconds"] = round(queued_for, 3)
    return ToolError(
        f"upstream server {server!r} did not answer within {seconds:g} s ({where})",
        code="upstream_timeout",
        http_status=504,
        retryable=True,
        details=details,
    )


def upstream_error(server: str, message: str, code: int | None) -> ToolError:
    """The server refused the request (an unknown tool, arguments it rejects...)."""
    return ToolError(
        f"upstream server {server!r} refused the request: {message}",
        code="upstream_error",
        http_status=502,
        details={"upstream": server, "upstream_code": code, "upstream_message": message},
    )
