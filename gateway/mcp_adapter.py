"""The one module that imports the ``mcp`` SDK: it maps the runtime onto a lowlevel ``Server``, and gives the
client packs use to front other MCP servers (:class:`gateway.api.UpstreamConnector`) its SDK half.

Everything MCP-specific (types, error codes, transports, the SDK client used by in-process tests and the CLI)
stays here, so an SDK upgrade touches one file. What needs no SDK lives beside it: :mod:`gateway.wire` (MCP's JSON
shapes), :mod:`gateway.request_context`, :mod:`gateway.upstream_session`, :mod:`gateway.upstream_process`.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp.types as mt
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from gateway import __version__, wire
from gateway.api.context import ProgressSink
from gateway.api.errors import ToolError
from gateway.api.upstream import (
    HttpTarget,
    ListKind,
    UpstreamConnectionLost,
    UpstreamRequestFailed,
    UpstreamSessionExpired,
    UpstreamTarget,
)
from gateway.request_context import Peers, call_context, principal_of
from gateway.runtime import CallOutcome, GatewayRuntime, ServedTool, UnknownTool
from gateway.stdio_pipes import LineSource, stdio_pipes
from gateway.upstream_process import launcher_argv
from gateway.upstream_session import watched

INVALID_PARAMS = mt.INVALID_PARAMS
_LIST_CHANGED = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


def _mcp_tool(served: ServedTool) -> mt.Tool:
    return mt.Tool.model_validate(wire.tool_json(served.name, served.tool, served.input_schema, served.output_schema))


def _tool_result(outcome: CallOutcome) -> dict[str, Any]:
    """The result as wire JSON (the SDK validates it before sending): content blocks as they came, or one JSON text
    block with the body as structured content."""
    if outcome.content is not None:
        return wire.tool_result_json(outcome.content, outcome.structured, outcome.is_error)
    text = [{"type": "text", "text": outcome.text}]
    return wire.tool_result_json(text, None if outcome.is_error else outcome.body, outcome.is_error)


def _protocol_error(err: ToolError) -> MCPError:
    code = INVALID_PARAMS if err.http_status < 500 else mt.INTERNAL_ERROR
    return MCPError(code, err.message, err.to_body()["error"])


class _GatewayServer(Server[Any]):
    """A lowlevel server that announces ``listChanged`` for tools, resources and prompts in the handshake era."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(notification_options or _LIST_CHANGED, *args, **kwargs)


def build_server(runtime: GatewayRuntime) -> Server[Any]:
    """A lowlevel SDK server whose handlers delegate to ``runtime`` (which must be started)."""
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
        context = call_context(runtime, ctx)
        try:
            outcome = await runtime.call_tool(params.name, params.arguments, context)
        except UnknownTool:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}") from None
        return _tool_result(outcome)

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
            None, mt.INVALID_REQUEST, f"Invalid Request: a message is a JSON object, not {wire.json_kind(value)}"
        )
    rpc_id = value.get("id")
    rpc_id = rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None
    branch = wire.message_kind(value)
    problems = [
        f"{'.'.join(str(part) for part in error['loc'][1:]) or '(message)'}: {error['msg']}"
        for error in errors
        if error["loc"][:1] == (branch,)
    ]
    detail = "; ".join(problems[:3]) or "not a JSON-RPC 2.0 request, notification or response"
    return _rpc_error(rpc_id, mt.INVALID_REQUEST, f"Invalid Request: {detail}")


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


# -- the client for upstream servers ----------------------------------------------------------------------------

_KINDS: dict[type, ListKind] = {
    **dict.fromkeys((mt.ToolListChangedNotification, ToolsListChanged), "tools"),
    **dict.fromkeys((mt.ResourceListChangedNotification, ResourcesListChanged), "resources"),
    **dict.fromkeys((mt.PromptListChangedNotification, PromptsListChanged), "prompts"),
}


class SdkWire:
    """The SDK half of an upstream session (:class:`gateway.upstream_session.Wire`): the transport, the SDK's
    ``Client``, and requests answered as MCP wire JSON."""

    def __init__(self) -> None:
        self._client: Any = None
        self._expired = False
        self.offers: frozenset[ListKind] = frozenset()

    async def open(
        self,
        stack: AsyncExitStack,
        target: UpstreamTarget,
        *,
        watch: Callable[[Any], Any],
        on_list_changed: Callable[[ListKind], None],
        stderr: Any,
    ) -> None:
        if isinstance(target, HttpTarget):

            async def note_expiry(response: httpx2.Response) -> None:
                if response.status_code == 404 and response.request.headers.get("mcp-session-id"):
                    self._expired = True

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(target.headers),  # the configured ones only: nothing of the gateway's caller
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    event_hooks={"response": [note_expiry]},
                )
            )
            transport: Any = streamable_http_client(target.url, http_client=http)
            mode = target.protocol
        else:
            executable, args = launcher_argv(target.command)
            params = StdioServerParameters(command=executable, args=args, env=dict(target.env), cwd=target.cwd)
            transport, mode = stdio_client(params, errlog=stderr), "auto"

        async def on_message(message: Any) -> None:
            if (kind := _KINDS.get(type(message))) is not None:
                on_list_changed(kind)

        client = Client(watched(transport, watch), mode=mode, message_handler=on_message, cache=None)  # type: ignore[arg-type]
        self._client = await stack.enter_async_context(client)
        caps = client.server_capabilities
        offered: dict[ListKind, Any] = {"tools": caps.tools, "resources": caps.resources, "prompts": caps.prompts}
        self.offers = frozenset(kind for kind, cap in offered.items() if cap is not None)

    @property
    def protocol_version(self) -> str:
        return self._client.protocol_version

    async def listen(self, on_list_changed: Callable[[ListKind], None]) -> None:
        if self._client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # the handshake era announces changes as notifications (``on_message`` above)
        kinds = {"tools_list_changed": True, "prompts_list_changed": True, "resources_list_changed": True}
        try:
            async with self._client.listen(**kinds) as subscription:
                async for event in subscription:
                    if (kind := _KINDS.get(type(event))) is not None:
                        on_list_changed(kind)
        except Exception:  # the server refused the listen stream, or dropped it: its changes go unannounced
            return

    async def request(self, method: str, params: Mapping[str, Any], *, progress: ProgressSink | None = None) -> Any:
        client, cursor = self._client, params.get("cursor")
        calls = {
            "tools/call": lambda: client.call_tool(params["name"], params["arguments"], progress_callback=progress),
            "resources/read": lambda: client.read_resource(params["uri"]),
            "prompts/get": lambda: client.get_prompt(params["name"], params["arguments"]),
            "tools/list": lambda: client.list_tools(cursor=cursor),
            "resources/list": lambda: client.list_resources(cursor=cursor),
            "resources/templates/list": lambda: client.list_resource_templates(cursor=cursor),
            "prompts/list": lambda: client.list_prompts(cursor=cursor),
        }
        try:
            return (await calls[method]()).model_dump(mode="json", by_alias=True, exclude_none=True)
        except MCPError as exc:
            if self._expired:
                raise UpstreamSessionExpired("the server no longer knows the session (404)") from None
            if exc.code == mt.CONNECTION_CLOSED:
                raise UpstreamConnectionLost(exc.message) from None
            raise UpstreamRequestFailed(exc.message, code=exc.code, data=exc.data) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise UpstreamConnectionLost("the connection ended") from exc
        except (RuntimeError, ValueError) as exc:  # a result the SDK refused (e.g. against the output schema)
            raise UpstreamRequestFailed(str(exc)) from None
