"""What the runtime needs from one request the MCP server received: who calls, over which transport, where the
call's progress goes, and which connections to tell when the catalogue changes.

The SDK's request context is read by attribute (``request``: the Starlette request over HTTP; ``session``: the
connection's session), so this module needs no SDK import (:mod:`gateway.mcp_adapter` is the one that has one).
"""

from __future__ import annotations

import weakref
from collections.abc import Collection
from typing import Any

from gateway.api.context import CallContext, Principal
from gateway.runtime import GatewayRuntime

__all__ = ["Peers", "call_context", "principal_of"]


def principal_of(runtime: GatewayRuntime, ctx: Any) -> Principal:
    """The principal the HTTP front authenticated (on the request's state), else the gateway's own identity."""
    request = getattr(ctx, "request", None)
    if request is not None:
        principal = getattr(request.state, "principal", None)
        if principal is not None:
            return principal
    assert runtime.default_principal is not None
    return runtime.default_principal


def call_context(runtime: GatewayRuntime, ctx: Any, *, in_process: bool = False) -> CallContext:
    """The runtime's call context for a request (HTTP when it carries a Starlette request, else stdio).

    A progress sink is set only when the caller asked for progress (its request carries ``_meta.progressToken``),
    so a pack that forwards the call elsewhere can tell whether anyone listens. ``in_process``: the SDK's
    in-process client hands its callback over without a token; the sink is then always set (the SDK's own
    ``report_progress`` is a no-op when no callback was given).
    """
    request = getattr(ctx, "request", None)
    principal = principal_of(runtime, ctx)
    if request is None:
        context = runtime.new_context(principal=principal, transport="stdio")
    else:
        context = runtime.new_context(principal=principal, transport="http", headers=dict(request.headers))
    meta = getattr(ctx, "meta", None) or {}
    if in_process or meta.get("progressToken", meta.get("progress_token")) is not None:
        context.progress_sink = ctx.session.report_progress
    return context


class Peers:
    """The connections that made a request, to tell handshake-era ones the catalogue changed (2026-07-28 ones
    learn it from their ``subscriptions/listen`` streams instead). Forgotten when their connection goes."""

    def __init__(self, modern_versions: Collection[str]) -> None:
        self._modern = modern_versions
        self._sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def seen(self, ctx: Any) -> None:
        session = ctx.session
        # The connection outlives each request's session object; the newest session reaches it.
        self._sessions[getattr(session, "_connection", session)] = session

    async def tell_changed(self) -> None:
        for session in list(self._sessions.values()):
            if session.protocol_version in self._modern:
                continue
            try:
                await session.send_tool_list_changed()
                await session.send_prompt_list_changed()
                await session.send_resource_list_changed()
            except Exception:  # a client that went away: nothing to tell
                continue
