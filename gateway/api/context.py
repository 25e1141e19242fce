"""Who is calling and what the call carries: the objects handed to tools and interceptors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["stdio", "http", "rest", "memory", "cli"]

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]
"""``sink(progress, total, message)``: delivers one progress notification to the caller."""


@dataclass(frozen=True)
class Principal:
    """The identity a call runs as.

    ``subject`` identifies the caller (a per-install id over stdio, the token's ``sub`` or the API key's id over
    HTTP); ``tenant`` groups callers of one organisation. Rate limits, usage records and votes key on
    :attr:`key`.
    """

    subject: str
    tenant: str | None = None
    scopes: frozenset[str] = frozenset()
    method: str = "none"
    """How the principal was established: ``none``, ``api_key``, ``jwt``, ``config``."""

    all_scopes: bool = False
    """True when no authentication is configured: every tool may be called."""

    @property
    def key(self) -> str:
        """``tenant:subject``, or ``subject`` without a tenant: one string per identity and one identity per string.
        ``%`` and ``:`` are percent-escaped in the tenant, and in a subject without a tenant, so a tenant-less
        ``acme:x`` and subject ``x`` of tenant ``acme`` never share a key (nor do tenant ``a:b``, subject ``c`` and
        tenant ``a``, subject ``b:c``); names without those characters keep the keys they always had."""
        if self.tenant:
            return f"{_escaped(self.tenant)}:{self.subject}"
        return _escaped(self.subject)

    def allows(self, scope: str | None) -> bool:
        return scope is None or self.all_scopes or scope in self.scopes


def _escaped(name: str) -> str:
    return name.replace("%", "%25").replace(":", "%3A") if ("%" in name or ":" in name) else name


@dataclass
class CallContext:
    """Per-call context handed to interceptors and tool handlers.

    ``state`` is a scratch dict interceptors use to pass facts down the chain (for instance the rate-limit
    decision, which the REST facade turns into ``X-RateLimit-*`` headers).

    A call the client cancels (``notifications/cancelled``, or a dropped request) is cancelled as a task: the
    handler sees the event loop's cancellation at its next ``await`` and must let it propagate.
    """

    correlation_id: str
    principal: Principal
    transport: Transport
    tool_name: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    progress_sink: ProgressSink | None = field(default=None, repr=False)
    """Set by the transport when the caller can receive progress (MCP ``notifications/progress``)."""

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the caller how far the call has got. A no-op when the caller did not ask for progress."""
        if self.progress_sink is not None:
            await self.progress_sink(progress, total, message)
