"""A real MCP server built with the official Python SDK, for the federation tests and the overhead benchmark.

    python py_server.py http PORT STATE_DIR     Streamable HTTP on 127.0.0.1:PORT (both protocol eras)
    python py_server.py stdio STATE_DIR         stdio

STATE_DIR receives what the tests check from outside: ``started-<n>`` for a ``slow`` call begun, ``cancelled-<n>``
for one cancelled by its client, ``headers-<n>.json`` and ``request-<n>.json`` with the HTTP headers and the
request id a ``whoami`` call arrived with. Test code only (it imports ``mcp``; the gateway's own modules never do,
but this one).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from pydantic import BaseModel, Field

STATE = Path(sys.argv[-1])
server = MCPServer("py-upstream", instructions="A test server.")
_counter = {"n": 0}
_running = {"now": 0, "most": 0}


def _next() -> int:
    _counter["n"] += 1
    return _counter["n"]


class Sum(BaseModel):
    total: int


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add two integers; the result is structured.")
def add(a: int, b: int) -> Sum:
    return Sum(total=a + b)


@server.tool(description="Work for a while, reporting progress; a cancelled call leaves a mark in the state dir.")
async def slow(seconds: float, steps: int, ctx: Context) -> str:
    (STATE / f"started-{_next()}").write_text("started")
    try:
        for step in range(1, steps + 1):
            await anyio.sleep(seconds / steps)
            await ctx.report_progress(step, steps, f"step {step}")
    except anyio.get_cancelled_exc_class():
        (STATE / f"cancelled-{_next()}").write_text("cancelled")
        raise
    return f"done after {steps} steps"


@server.tool(description="Wait `ms` milliseconds (a remote call's own latency), then answer.")
async def pause(ms: float) -> str:
    if ms < 0:  # the server's own error result (isError: true)
        raise ValueError("a pause cannot be negative")
    if ms > 0:
        await anyio.sleep(ms / 1000)
    return "ok"


@server.tool(description="Sleep; answer how many calls of this tool ever ran at once.")
async def overlap(seconds: float) -> int:
    _running["now"] += 1
    _running["most"] = max(_running["most"], _running["now"])
    try:
        await anyio.sleep(seconds)
    finally:
        _running["now"] -= 1
    return _running["most"]


@server.tool(description="Exit at once with status 7, without answering (a crash).")
def crash() -> str:
    os._exit(7)


@server.tool(description="Write `size` bytes of 'y' to stderr, then a newline if `newline`; or `lines` short lines.")
def shout(size: int = 0, lines: int = 0, newline: bool = True) -> str:
    chunk = b"y" * min(size, 1 << 20)
    for start in range(0, size, len(chunk) or 1):
        os.write(2, chunk[: size - start])
    os.write(2, b"\n" if newline else b"")
    for n in range(lines):
        os.write(2, f"line {n}\n".encode())
    return "said"


@server.tool(description="A text result of `size` characters.")
def big(size: int) -> str:
    return "x" * size


@server.tool(description="The process id of this server.")
def pid() -> int:
    return os.getpid()


@server.tool(description="Record the HTTP headers and the JSON-RPC request id this call arrived with.")
def whoami(ctx: Context) -> str:
    request = ctx.request_context.request
    headers = dict(request.headers) if request is not None else {}
    n = _next()
    (STATE / f"headers-{n}.json").write_text(json.dumps(headers))
    (STATE / f"request-{n}.json").write_text(json.dumps(ctx.request_id))
    return "recorded"


@server.tool(description="Answer the region the call was routed by (its Mcp-Param-Region header, 2026-07-28).")
def regional(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})], ctx: Context) -> str:
    request = ctx.request_context.request
    routed = request.headers.get("mcp-param-region") if request is not None else None
    return f"{region} routed by {routed}"


@server.tool(description="A tool whose description carries a secret: ghp_0123456789abcdefghijABCDEFGHIJ012345")
def leak() -> str:
    return "contact bob.smith@corp-mail.io with key AKIAZ3MHALPEXH7BQX4K"


@server.tool(description="Register one more tool and tell the clients the tool list changed.")
async def grow(name: str, ctx: Context) -> str:
    def extra() -> str:
        return f"I am {name}"

    server.add_tool(extra, name=name, description=f"Added at run time: {name}")
    await ctx.notify_tools_changed()  # listen streams (2026-07-28)
    await ctx.request_context.session.send_tool_list_changed()  # the handshake era
    return "grown"


@server.resource("py://greeting", description="A fixed greeting.", mime_type="text/plain")
def greeting() -> str:
    return "hello from python"


@server.resource("py://items/{item_id}", description="One item.", mime_type="application/json")
def item(item_id: str) -> str:
    return json.dumps({"item": item_id})


@server.resource("py://search{?q,limit}", description="A search (query parameters).", mime_type="text/plain")
def search(q: str = "", limit: str = "10") -> str:
    return f"searched {q!r}, {limit} at most"


@server.resource("py://files{/path*}", description="A file by its path.", mime_type="text/plain")
def file(path: list[str] | None = None) -> str:  # the SDK hands an exploded variable over as its segments
    return f"file {'/'.join(path or [])}"


@server.prompt(description="Ask for a review of some code.")
def review(code: str, language: str = "python") -> str:
    return f"Please review this {language} code:\n{code}"


def _list_a_bad_tool() -> None:
    """Serve ``lopsided``, a tool whose input schema is a string's, in ``tools/list`` as it is: the SDK's server
    checks its own answers against the protocol and would refuse the page, so it skips the tools' check."""
    from mcp_types import methods

    server.add_tool(echo, name="lopsided", description="Its input schema is a string's.")
    server._tool_manager.get_tool("lopsided").parameters = {"type": "string"}
    strict = methods.serialize_server_result

    def lenient(method: str, version: str, data: Any, **options: Any) -> dict[str, Any]:
        if method != "tools/list":
            return strict(method, version, data, **options)
        return {**strict(method, version, {**data, "tools": []}, **options), "tools": data["tools"]}

    methods.serialize_server_result = lenient


def main() -> None:
    if os.environ.get("PY_SERVER_FAIL"):
        print("cannot start: told to fail", file=sys.stderr)
        sys.exit(3)
    STATE.mkdir(parents=True, exist_ok=True)
    if os.environ.get("PY_SERVER_BAD_SCHEMA"):  # one tool whose input schema is no object's: the protocol refuses it
        _list_a_bad_tool()
    if said := os.environ.get("PY_SERVER_SAY_ENV"):  # a server that prints a variable of its own (its key)
        print(f"starting with {said}={os.environ.get(said)}", file=sys.stderr, flush=True)
    if os.environ.get("PY_SERVER_STUBBORN_CHILD"):  # a helper in its group that ignores SIGTERM, holding stdout
        import subprocess

        script = f"trap '' TERM; sleep 300 & echo $$ $! > {STATE}/stubborn-$$.pids; wait"
        subprocess.Popen(["/bin/sh", "-c", script])
    if os.environ.get("PY_SERVER_HANG_ONCE") and not (STATE / "hung-once").exists():
        (STATE / "hung-once").write_text("1")
        import time

        time.sleep(3600)  # the first start never answers `initialize`
    if sys.argv[1] == "stdio":
        server.run("stdio")
        return
    import uvicorn

    app = server.streamable_http_app(host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")


if __name__ == "__main__":
    main()
