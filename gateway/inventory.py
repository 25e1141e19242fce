"""What ``gateway plugins`` and ``gateway tools`` say about a started deployment: each tool with the pack and, for
a pack that fronts other servers, the remote server it comes from and that server's state."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio

from gateway.runtime import GatewayRuntime

__all__ = ["enabled_packs", "pack_lines", "tool_lines", "tool_rows", "upstream_lines"]


def upstream_lines(runtime: GatewayRuntime) -> list[str]:
    """One line per remote server the packs forward to (with its last error): transport, state, the tools served
    from it (the host's count: a tool it left out, its name clashing with a local one say, is not one), target."""
    served: dict[tuple[str, str], int] = {}
    for tool in runtime.tools.values():
        if tool.tool.upstream:
            served[(tool.pack, tool.tool.upstream)] = served.get((tool.pack, tool.tool.upstream), 0) + 1
    lines = []
    for pack, status in runtime.upstream_statuses():
        where = f"{pack}/{status.name}  {status.transport}  {status.state}"
        lines.append(f"    {where}  {served.get((pack, status.name), 0)} tools  {status.detail}")
        if status.last_error:
            lines.append(f"        last error: {status.last_error}")
    return lines


def pack_lines(runtime: GatewayRuntime) -> list[str]:
    """Each enabled pack with its tool count, then the remote servers."""
    counts = dict.fromkeys(runtime.packs, 0)
    for served in runtime.tools.values():
        counts[served.pack] += 1
    return [f"  {name}: {count} tools" for name, count in counts.items()] + upstream_lines(runtime)


def enabled_packs(running: Callable[[], AbstractAsyncContextManager[GatewayRuntime]], source: object) -> list[str]:
    """The tail of ``gateway plugins``: the deployment started (``running``), its packs and remote servers. A
    deployment that cannot start raises its error (the command then fails, after the inventory)."""

    async def main() -> list[str]:
        async with running() as runtime:
            return pack_lines(runtime)

    return [f"enabled packs ({source}):", *anyio.run(main)]


def tool_rows(runtime: GatewayRuntime) -> list[dict[str, Any]]:
    """Every served tool: name, pack, remote server and its state, description, scope, schemas."""
    states = {(pack, status.name): status for pack, status in runtime.upstream_statuses()}
    rows = []
    for name, served in runtime.tools.items():
        status = states.get((served.pack, served.tool.upstream or ""))
        rows.append(
            {
                "name": name,
                "pack": served.pack,
                "upstream": served.tool.upstream,
                "upstream_state": status.state if status else None,
                "upstream_error": status.last_error if status else None,
                "description": served.tool.description,
                "scope": served.tool.scope,
                "inputSchema": served.input_schema,
                "outputSchema": served.output_schema,
            }
        )
    return rows


def tool_lines(rows: list[dict[str, Any]], upstreams: list[str]) -> list[str]:
    """The text form of ``gateway tools``."""
    lines = []
    for row in rows:
        source = f"{row['pack']}/{row['upstream']}: {row['upstream_state']}" if row["upstream"] else row["pack"]
        lines.append(f"{row['name']}  [{source}]  scope={row['scope'] or '-'}")
        lines.append(f"    {row['description'].splitlines()[0] if row['description'] else ''}")
        lines.append(f"    input:  {json.dumps(row['inputSchema'])}")
        if row.get("outputSchema") is not None:
            lines.append(f"    output: {json.dumps(row['outputSchema'])}")
    return lines + (["upstream servers:", *upstreams] if upstreams else [])
