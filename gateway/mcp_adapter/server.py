"""The gateway as an MCP server: the runtime mapped onto a lowlevel SDK ``Server``, served over stdio, over
Streamable HTTP (both protocol eras), or in-process for tests, benchmarks and ``gateway call``."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import structlog
from pydantic_core import from_json
from starlette.routing import BaseRoute
from starlette.types import ASGIApp

from gateway import __version__, wire
from gateway.api.errors import ToolError
from gateway.http_fastcall import FastToolCalls
from gateway.mcp_adapter.exchange import ModernCallExchange, run_call
from gateway.mcp_adapter.sdk import (
    MODERN_PROTOCOL_VERSIONS,
    Client,
    InMemorySubscriptionBus,
    ListenHandler,
    MCPError,
    NotificationOptions,
    PromptsListChanged,
    ResourcesListChanged,
    Server,
    SessionMessage,
    ToolsListChanged,
    TransportSecuritySettings,
    mt,
    stdio_server,
)
from gateway.mcp_adapter.stdio_outstanding import AnswerWatch, Outstanding
from gateway.request_context import Peers, call_context, principal_of
from gateway.runtime import GatewayRuntime, ServedTool
from gateway.stdio_fastcall import FastStdioCalls
from gateway.stdio_pipes import LineSource, PipeWriter, stdio_pipes

log = structlog.get_logger(__name__)
INVALID_PARAMS = mt.INVALID_PARAMS
_LIST_CHANGED = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


def _mcp_tool(served: ServedTool) -> mt.Tool:
    return mt.Tool.model_validate(wire.tool_json(served.name, served.tool, served.input_schema, served.output_schema))


def _protocol_error(err: ToolError) -> MCPError:
    code = INVALID_PARAMS if err.http_status < 500 else mt.INTERNAL_ERROR
    return MCPError(code, err.message, err.to_body()["error"])


class _GatewayServer(Server[Any]):
    """A lowlevel server that announces ``listChanged`` for tools, resources and prompts in the handshake era."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(notification_options or _LIST_CHANGED, *args, **kwargs)


def build_server(runtime: GatewayRuntime, *, in_process: bool = False) -> Server[Any]:
    """A lowlevel SDK server whose handlers delegate to ``runtime`` (which must be started); ``in_process`` for
    the SDK's in-process client (see :func:`gateway.request_context.call_context`)."""
    tool_cache: dict[str, mt.Tool] = {}
    bus, peers = InMemorySubscriptionBus(), Peers(MODERN_PROTOCOL_VERSIONS)

    def refresh() -> None:
        tool_cache.clear()
        tool_cache.update({name: _mcp_tool(served) for name, served in runtime.tools.items()})

    refresh()
    alive = weakref.ref(peers)  # the runtime must not keep a server alive: the listener goes with the server

    async def on_catalogue_change() -> None:
        if alive() is None:
            remove()
            return
        refresh()
        for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
            await bus.publish(event)  # to 2026-07-28 clients' subscriptions/listen streams
        await peers.tell_changed()

    remove = runtime.add_catalogue_listener(on_catalogue_change)

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        peers.seen(ctx)
        principal = principal_of(runtime, ctx)
        return mt.ListToolsResult(
            tools=[tool_cache[s.name] for s in runtime.visible_tools(principal) if s.name in tool_cache]
        )

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> dict[str, Any]:
        return await run_call(runtime, params.name, params.arguments, call_context(runtime, ctx, in_process=in_process))

    # Results as SDK models (built from wire JSON): a model fills what each protocol era requires.
    async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
        peers.seen(ctx)
        cursor = getattr(params, "cursor", None) if params is not None else None
        fixed = [] if cursor else [wire.resource_json(r) for r in runtime.visible_resources(principal_of(runtime, ctx))]
        try:
            entries, next_cursor = await runtime.list_template_resources(cursor, call_context(runtime, ctx))
        except ToolError as err:
            raise _protocol_error(err) from None
        listed = [wire.entry_json(entry) for entry in entries]
        return mt.ListResourcesResult.model_validate({"resources": fixed + listed, "nextCursor": next_cursor})

    async def list_templates(ctx: Any, params: Any) -> mt.ListResourceTemplatesResult:
        found = [wire.template_json(t) for t in runtime.visible_templates(principal_of(runtime, ctx))]
        return mt.ListResourceTemplatesResult.model_validate({"resourceTemplates": found})

    async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        try:
            contents = await runtime.read_resource(uri, call_context(runtime, ctx))
        except ToolError as err:
            raise _protocol_error(err) from None
        return mt.ReadResourceResult.model_validate({"contents": [wire.contents_json(uri, c) for c in contents]})

    async def list_prompts(ctx: Any, params: Any) -> mt.ListPromptsResult:
        peers.seen(ctx)
        prompts = runtime.visible_prompts(principal_of(runtime, ctx))
        return mt.ListPromptsResult.model_validate({"prompts": [wire.prompt_json(n, p) for n, p in prompts]})

    async def get_prompt(ctx: Any, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        try:
            result = await runtime.get_prompt(params.name, params.arguments, call_context(runtime, ctx))
        except ToolError as err:
            raise _protocol_error(err) from None
        return mt.GetPromptResult.model_validate(wire.prompt_result_json(result))

    server = _GatewayServer(
        runtime.name,
        version=__version__,
        instructions=runtime.instructions,
        # Checking a 2026-07-28 call's Mcp-Param headers needs the tool's schema: without this the SDK runs a
        # whole tools/list per call to find it (about 1 ms of the gateway's CPU per call).
        get_tool_input_schema=lambda name: getattr(runtime.tools.get(name), "input_schema", None),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(bus),
    )
    server._gateway_peers = peers  # type: ignore[attr-defined]  # lives as long as the server
    return server


async def serve_stdio(runtime: GatewayRuntime) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes the stream (or the task is cancelled).

    At the end of stdin the requests already read are answered first, for at most
    ``transport.shutdown_grace_seconds`` (:mod:`.stdio_outstanding`)."""
    server = build_server(runtime)
    exchange = ModernCallExchange(server, runtime, json_response=True)
    grace = runtime.loaded.config.transport.shutdown_grace_seconds
    async with stdio_pipes() as (lines, sink), anyio.create_task_group() as calls:
        # Direct answers need the pipe writer (whole lines on the event loop, which the SDK's writer shares); a
        # regular file written through a worker thread gets the SDK's answers only.
        fast = FastStdioCalls(runtime, exchange, sink, calls) if isinstance(sink, PipeWriter) else None
        checked = CheckedLines(lines, fast, grace_seconds=grace)
        try:
            async with stdio_server(checked, sink) as (read_stream, write_stream):  # type: ignore[arg-type]
                answers = checked.answer_through(write_stream)
                await server.run(read_stream, answers, server.create_initialization_options())
        except* BrokenPipeError:  # nobody reads the answers any more: serving ends, as at the end of stdin
            log.warning("the client closed stdout: serving ends")
        if fast is not None:
            fast.close()  # the grace ran out: calls still running are answered as the SDK's are


class CheckedLines:
    """The stdin lines that are JSON-RPC messages, as the SDK's stdio reader iterates them.

    The SDK only logs (at debug level) a line it cannot read and answers nothing, so a client that sent a broken
    line waits forever. Here a line that is not JSON is answered with a parse error (``-32700``, id ``null``), and
    a JSON value that is not a JSON-RPC message with an invalid-request error (``-32600``, with the id it carries
    when it has one), written through the SDK's own write stream so they never interleave with its output. Blank
    lines are skipped. Lines that ``fast`` takes (2026-07-28 tool calls it answers itself) never reach the SDK.
    The end of stdin reaches the SDK once the requests read so far are answered, or ``grace_seconds`` after it.
    """

    def __init__(self, lines: LineSource, fast: FastStdioCalls | None = None, *, grace_seconds: float = 0) -> None:
        self._lines = aiter(lines)
        self._fast = fast
        self._grace = grace_seconds
        self._outstanding = Outstanding()
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_through(self, write_stream: Any) -> AnswerWatch:
        """Send error responses to ``write_stream`` (the SDK's stream of outgoing messages); the stream to hand the
        SDK's server instead of it, which notes the answers it takes (a refusal here answers no request read)."""
        self._answers = write_stream
        self._ready.set()
        return AnswerWatch(write_stream, self._outstanding)

    def __aiter__(self) -> CheckedLines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = await anext(self._lines)
            except StopAsyncIteration:
                await self._settle()
                raise
            if not line.strip() or (self._fast is not None and self._fast.take(line)):
                continue
            message, refusal = read_line(line)
            if refusal is None:
                self._outstanding.read(message)
                return line
            await self._ready.wait()
            try:
                await self._answers.send(SessionMessage(refusal))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return line  # the server is shutting down: let the SDK drop the line as it would

    async def _settle(self) -> None:
        """Wait (at most the grace) until what was read is answered: the SDK cancels what runs at the end of input."""
        with anyio.move_on_after(self._grace):
            await self._outstanding.settled()
            if self._fast is not None:
                await self._fast.settled()


def line_error(line: str) -> mt.JSONRPCError | None:
    """The JSON-RPC error answering a stdio ``line`` that is not a JSON-RPC message, or None when it is one."""
    return read_line(line)[1]


def read_line(line: str) -> tuple[Any, mt.JSONRPCError | None]:
    """The JSON value a stdio ``line`` carries and None when it is a JSON-RPC message, else None and the error
    answering it (:func:`gateway.wire.rejection`, as over HTTP). The line is read by the SDK's own JSON parser
    (pydantic's), so what passes here the SDK reads too."""
    try:
        value = from_json(line)
    except ValueError:
        refused = wire.rejection(line)  # it says why, in pydantic's words
    else:
        refused = wire.rejection(line, value)
    if refused is not None:
        return None, _rpc_error(refused.id, refused.code, refused.message)
    return value, None


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
) -> ASGIApp:
    """The SDK's Streamable HTTP app (both protocol eras) with DNS-rebinding protection on, plus ``routes``; a
    2026-07-28 ``tools/call`` that asked for no progress or logs is answered in front of it
    (:mod:`gateway.http_fastcall`)."""
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", *allowed_hosts],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *allowed_origins],
    )
    server = build_server(runtime)
    app = server.streamable_http_app(
        streamable_http_path=path,
        json_response=json_response,
        transport_security=security,
        host=host,
        max_request_body_size=max_body_bytes,
        custom_starlette_routes=list(routes),
        session_idle_timeout=runtime.loaded.config.transport.session_idle_seconds,
        max_sessions=runtime.loaded.config.transport.max_sessions,
    )
    exchange = ModernCallExchange(server, runtime, json_response=json_response)
    return FastToolCalls(app, exchange, path=path, modern=frozenset(MODERN_PROTOCOL_VERSIONS))


@asynccontextmanager
async def in_memory_client(runtime: GatewayRuntime, *, mode: str = "auto") -> AsyncIterator[Client]:
    """An SDK ``Client`` connected in-process to a server over ``runtime`` (tests, benchmarks, ``gateway call``)."""
    async with Client(build_server(runtime, in_process=True), mode=mode) as client:  # type: ignore[arg-type]
        yield client
