"""Helpers for testing packs and providers against a real gateway (used by our tests and by plugin authors).

``running_gateway`` starts a runtime and connects the MCP SDK's ``Client`` in-process; ``http_gateway`` serves
real HTTP on a loopback port from a background thread.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio

from gateway import http, mcp_adapter
from gateway.app import ConfigSource, read_config, running_runtime
from gateway.config import LoadedConfig
from gateway.runtime import GatewayRuntime


def with_data_dir(source: ConfigSource, data_dir: Path | None) -> ConfigSource:
    """``source`` with ``[gateway] data_dir`` set (mappings and TOML are copied, not changed)."""
    if data_dir is None:
        return source
    loaded: LoadedConfig = read_config(copy.deepcopy(source) if isinstance(source, dict) else source)
    loaded.config.gateway.data_dir = Path(data_dir)
    return loaded


@asynccontextmanager
async def running_gateway(
    config: ConfigSource,
    data_dir: Path | None = None,
    *,
    extra_plugins: Iterable[tuple[str, object]] = (),
    mode: str = "auto",
) -> AsyncIterator[Any]:
    """An MCP SDK ``Client`` connected in-process to a gateway built from ``config``."""
    async with running_runtime(
        with_data_dir(config, data_dir), extra_plugins=extra_plugins, configure_logs=False
    ) as runtime:
        async with mcp_adapter.in_memory_client(runtime, mode=mode) as client:
            client.runtime = runtime  # type: ignore[attr-defined]
            yield client


@contextmanager
def http_gateway(
    config: ConfigSource,
    data_dir: Path | None = None,
    *,
    extra_plugins: Iterable[tuple[str, object]] = (),
    timeout: float = 60.0,
) -> Iterator[tuple[str, GatewayRuntime]]:
    """Serve ``config`` over real HTTP on 127.0.0.1 (free port) in a thread; yields (base URL, runtime)."""
    ready = threading.Event()
    state: dict[str, Any] = {}

    async def main() -> None:
        try:
            async with running_runtime(
                with_data_dir(config, data_dir), extra_plugins=extra_plugins, configure_logs=False
            ) as runtime:
                state["runtime"] = runtime

                def on_ready(port: int, stop: Any) -> None:
                    state["port"], state["stop"] = port, stop
                    ready.set()

                await http.serve_http(runtime, host="127.0.0.1", port=0, on_ready=on_ready)
        except BaseException as exc:
            state["error"] = exc
            ready.set()

    thread = threading.Thread(target=anyio.run, args=(main,), daemon=True)
    thread.start()
    if not ready.wait(timeout):
        raise TimeoutError("the HTTP gateway did not start in time")
    if "error" in state:
        raise state["error"]
    try:
        yield f"http://127.0.0.1:{state['port']}", state["runtime"]
    finally:
        state["stop"]()
        thread.join(timeout)
