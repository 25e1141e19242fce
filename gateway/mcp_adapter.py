"""The one module that imports the ``mcp`` SDK: it maps the runtime onto a lowlevel ``Server``.

Everything MCP-specific (types, error codes, transports, the SDK client used by in-process tests and the CLI)
stays here, so an SDK upgrade touches one file.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp.types as mt
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from gateway import __version__
from gateway.api.context import CallContext, Principal
from gateway.api.errors import ToolError
from gateway.runtime import GatewayRuntime, ServedTool, UnknownTool
from gateway.stdio_pipes import LineSource, stdio_pipes

INVALID_PARAMS = mt.INVALID_PARAMS


def _principal(runtime: GatewayRuntime, ctx: Any) -> Principal:
    request = getattr(ctx, "request", None)
    if request is not None:
        principal = getattr(request.state, "principal", None)
        if principal is not None:
            return principal
    assert runtime.default_principal is not None
    return runtime.default_principal


def _new_context(runtime: GatewayRuntime, ctx: Any) -> CallContext:
    """The runtime's call context for an SDK request context (HTTP when it carries a Starlette request)."""
    request = getattr(ctx, "request", None)
    if request is None:
        return runtime.new_context(principal=_principal(runtime, ctx), transport="stdio")
    return runtime.new_context(principal=_principal(runtime, ctx), transport="http", headers=dict(request.headers))


def _mcp_tool(served: ServedTool) -> mt.Tool:
    tool = served.tool
    ann = tool.annotations
    return mt.Tool(
        name=served.name,
        title=ann.title,
        description=tool.description,
        input_schema=served.input_schema,
        output_schema=served.output_schema,
        annotations=mt.ToolAnnotations(
            title=ann.title,
            read_only_hint=ann.read_only,
            destructive_hint=ann.destructive,
            idempotent_hint=ann.idempotent,
            open_world_hint=ann.open_world,
        ),
    )


def build_server(runtime: GatewayRuntime) -> Server[Any]:
    """A lowlevel SDK server whose handlers delegate to ``runtime`` (which must be started)."""
    tool_cache: dict[str, mt.Tool] = {name: _mcp_tool(served) for name, served in runtime.tools.items()}

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        principal = _principal(runtime, ctx)
        return mt.ListToolsResult(tools=[tool_cache[s.name] for s in runtime.visible_tools(principal)])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        context = _new_context(runtime, ctx)
        try:
            outcome = await runtime.call_tool(params.name, params.arguments, context)
        except UnknownTool:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}") from None
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=outcome.text)],
            structured_content=None if outcome.is_error else outcome.body,
            is_error=outcome.is_error,
        )

    async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
        principal = _principal(runtime, ctx)
        cursor = getattr(params, "cursor", None) if params is not None else None
        fixed = (
            []
            if cursor
            else [
                mt.Resource(uri=r.uri, name=r.name, description=r.description, mime_type=r.mime_type)
                for r in runtime.visible_resources(principal)
            ]
        )
        try:
            entries, next_cursor = await runtime.list_template_resources(cursor, _new_context(runtime, ctx))
        except ToolError as err:
            raise MCPError(INVALID_PARAMS, err.message, err.to_body()["error"]) from None
        listed = [
            mt.Resource(uri=e.uri, name=e.name, description=e.description, mime_type=e.mime_type, size=e.size)
            for e in entries
        ]
        return mt.ListResourcesResult(resources=fixed + listed, next_cursor=next_cursor)

    async def list_templates(ctx: Any, params: Any) -> mt.ListResourceTemplatesResult:
        principal = _principal(runtime, ctx)
        return mt.ListResourceTemplatesResult(
            resource_templates=[
                mt.ResourceTemplate(
                    uri_template=t.uri_template, name=t.name, description=t.description, mime_type=t.mime_type
                )
                for t in runtime.visible_templates(principal)
            ]
        )

    async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        context = _new_context(runtime, ctx)
        try:
            content = await runtime.read_resource(uri, context)
        except ToolError as err:
            raise MCPError(INVALID_PARAMS, err.message, err.to_body()["error"]) from None
        return mt.ReadResourceResult(
            contents=[mt.TextResourceContents(uri=uri, mime_type=content.mime_type, text=content.text)]
        )

    has_resources = bool(runtime.resources or runtime.templates)
    return Server(
        runtime.name,
        version=__version__,
        instructions=runtime.instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources if has_resources else None,
        on_list_resource_templates=list_templates if has_resources else None,
        on_read_resource=read_resource if has_resources else None,
    )


async def serve_stdio(runtime: GatewayRuntime) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes the stream (or the task is cancelled)."""
    server = build_server(runtime)
    async with stdio_pipes() as (lines, sink):
        checked = CheckedLines(lines)
        async with stdio_server(checked, sink) as (read_stream, write_stream):  # type: ignore[arg-type]
            checked.answer_through(write_stream)
            await server.run(read_stream, write_stream, server.create_initialization_options())


class CheckedLines:
    """The stdin lines that are JSON-RPC messages, as the SDK's stdio reader iterates them.

    The SDK only logs (at debug level) a line it cannot read and answers nothing, so a client that sent a broken
    line waits forever. Here a line that is not JSON is answered with a parse error (``-32700``, id ``null``), and
    a JSON value that is not a JSON-RPC message with an invalid-request error (``-32600``, with the id it carries
    when it has one), written through the SDK's own write stream so they never interleave with its output. Blank
    lines are skipped.
    """

    def __init__(self, lines: LineSource) -> None:
        self._lines = aiter(lines)
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_through(self, write_stream: Any) -> None:
        """Send error responses to ``write_stream`` (the SDK's stream of outgoing messages)."""
        self._answers = write_stream
        self._ready.set()

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await anext(self._lines)
            if not line.strip():
                continue
            refusal = line_error(line)
            if refusal is None:
                return line
            await self._ready.wait()
            try:
                await self._answers.send(SessionMessage(refusal))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return line  # the server is shutting down: let the SDK drop the line as it would


def line_error(line: str) -> mt.JSONRPCError | None:
    """The JSON-RPC error answering a stdio ``line`` that is not a JSON-RPC message, or None when it is one."""
    try:
        mt.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
    if any(error["type"] == "json_invalid" for error in errors):
        reason = errors[0]["msg"].removeprefix("Invalid JSON: ")
        return _rpc_error(None, mt.PARSE_ERROR, f"Parse error: the line is not JSON ({reason})")
    value = json.loads(line)
    if not isinstance(value, dict):
        return _rpc_error(
            None, mt.INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {_json_kind(value)}"
        )
    rpc_id = value.get("id")
    rpc_id = rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None
    branch = _message_kind(value)
    problems = [
        f"{'.'.join(str(part) for part in error['loc'][1:]) or '(message)'}: {error['msg']}"
        for error in errors
        if error["loc"][:1] == (branch,)
    ]
    detail = "; ".join(problems[:3]) or "not a JSON-RPC 2.0 request, notification or response"
    return _rpc_error(rpc_id, mt.INVALID_REQUEST, f"Invalid Request: {detail}")


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "an array (batches are not supported)"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return "a string" if isinstance(value, str) else "null"


def _message_kind(message: dict[str, Any]) -> str | None:
    """Which JSON-RPC message ``message`` tries to be (the SDK model whose errors explain what is wrong)."""
    if "method" in message:
        return "JSONRPCRequest" if "id" in message else "JSONRPCNotification"
    if "error" in message:
        return "JSONRPCError"
    return "JSONRPCResponse" if "result" in message else None


def _rpc_error(rpc_id: str | int | None, code: int, message: str) -> mt.JSONRPCError:
    return mt.JSONRPCError(jsonrpc="2.0", id=rpc_id, error=mt.ErrorData(code=code, message=message))


async def refuse_stdio(reason: str) -> None:
    """Answer every request on this process's stdin with an error saying ``reason``, until the client closes it.

    For a gateway that could not start: the client (an editor launching the server) then shows why, instead of
    a bare "Connection closed"."""
    async with stdio_pipes() as (lines, sink):
        checked = CheckedLines(lines)
        async with stdio_server(checked, sink) as (read_stream, write_stream), write_stream:  # type: ignore[arg-type]
            checked.answer_through(write_stream)
            async for item in read_stream:
                if isinstance(item, SessionMessage) and isinstance(item.message, mt.JSONRPCRequest):
                    await write_stream.send(SessionMessage(_rpc_error(item.message.id, mt.INTERNAL_ERROR, reason)))


def http_app(
    runtime: GatewayRuntime,
    *,
    path: str,
    host: str,
    allowed_hosts: Sequence[str],
    allowed_origins: Sequence[str],
    max_body_bytes: int,
    json_response: bool,
    routes: Sequence[BaseRoute],
) -> Starlette:
    """The SDK's Streamable HTTP app (both protocol eras) with DNS-rebinding protection on, plus ``routes``."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *allowed_hosts],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *allowed_origins],
    )
    server = build_server(runtime)
    return server.streamable_http_app(
        streamable_http_path=path,
        json_response=json_response,
        transport_security=security,
        host=host,
        max_request_body_size=max_body_bytes,
        custom_starlette_routes=list(routes),
    )


@asynccontextmanager
async def in_memory_client(runtime: GatewayRuntime, *, mode: str = "auto") -> AsyncIterator[Client]:
    """An SDK ``Client`` connected in-process to a server over ``runtime`` (tests, benchmarks, ``gateway call``)."""
    async with Client(build_server(runtime), mode=mode) as client:  # type: ignore[arg-type]
        yield client
