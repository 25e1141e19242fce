"""The gateway's adapter to the ``mcp`` SDK: the gateway as an MCP server (:mod:`.server`), the protocol's rules for
its direct answer to a 2026-07-28 ``tools/call`` over HTTP and stdio (:mod:`.exchange`), and the SDK half of the
client packs use to front other MCP servers (:mod:`.upstream`, with direct tool calls to stdio servers in
:mod:`.stdio_calls`; :class:`gateway.api.UpstreamConnector`). One module, :mod:`.sdk`, imports the SDK.

Everything MCP-specific (types, error codes, transports, the SDK client used by in-process tests and the CLI)
stays in this package, so an SDK upgrade touches it alone. What needs no SDK lives beside it: :mod:`gateway.wire`
(MCP's JSON shapes), :mod:`gateway.request_context`, :mod:`gateway.http_fastcall`, :mod:`gateway.stdio_fastcall`,
:mod:`gateway.upstream_http`, :mod:`gateway.upstream_session`, :mod:`gateway.upstream_process`.
"""

from __future__ import annotations

from gateway.mcp_adapter.exchange import ModernCallExchange
from gateway.mcp_adapter.server import (
    CheckedLines,
    build_server,
    http_app,
    in_memory_client,
    line_error,
    refuse_stdio,
    serve_stdio,
)
from gateway.mcp_adapter.upstream import SdkWire

__all__ = [
    "CheckedLines",
    "ModernCallExchange",
    "SdkWire",
    "build_server",
    "http_app",
    "in_memory_client",
    "line_error",
    "refuse_stdio",
    "serve_stdio",
]
