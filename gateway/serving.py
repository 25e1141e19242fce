"""``gateway serve``'s serving: the runtime over its transport until serving ends or a stop signal ends it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from gateway.app import read_config
from gateway.runtime import GatewayRuntime
from gateway.shutdown import ShutdownSignals


async def serve_runtime(
    runtime: GatewayRuntime, shutdown: ShutdownSignals, *, transport: str | None, host: str | None, port: int | None
) -> None:
    """Serve ``runtime`` over ``transport`` (default: the configured one) until serving ends or a stop signal ends
    it: over stdio by cancelling, over HTTP gracefully (uvicorn finishes the requests in flight)."""
    from gateway import http, mcp_adapter

    if (transport or runtime.loaded.config.transport.kind) == "stdio":
        await shutdown.serve(lambda: mcp_adapter.serve_stdio(runtime))
        return

    def ready(bound: int, stop: Callable[[], None]) -> None:
        shown = http.url_host(host or runtime.loaded.config.transport.host)
        click.echo(f"listening on http://{shown}:{bound}", err=True)
        shutdown.stop_gracefully_with(stop)

    await shutdown.serve(lambda: http.serve_http(runtime, host=host, port=port, on_ready=ready, capture_signals=False))


def stdio_client_waits(config_path: Path, transport: str | None) -> bool:
    """Whether an MCP client is on stdin (the stdio transport, and stdin is not a terminal)."""
    kind = transport
    if kind is None:
        try:
            kind = read_config(config_path).config.transport.kind
        except Exception:
            kind = "stdio"  # the default
    return kind == "stdio" and not sys.stdin.isatty()
