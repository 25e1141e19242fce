"""The one module that imports the ``mcp`` SDK: it maps the runtime onto a lowlevel ``Server``, and gives the
client packs use to front other MCP servers (:class:`gateway.api.UpstreamConnector`) its SDK half.

Everything MCP-specific (types, error codes, transports, the SDK client used by in-process tests and the CLI)
stays here, so an SDK upgrade touches one file. What needs no SDK lives beside it: an upstream session's life and
its wire-JSON answers (:mod:`gateway.upstream_session`, :mod:`gateway.wire`), the stdio launcher and stderr logging
(:mod:`gateway.upstream_process`).
"""

from __future__ import annotations

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
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged
from mcp.types.version import MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from gateway import __version__, wire
from gateway.api.context import CallContext, Principal, ProgressSink
from gateway.api.errors import ToolError
from gateway.api.upstream import (
    HttpTarget,
    ListKind,
    UpstreamConnectionLost,
    UpstreamRequestFailed,
    UpstreamSessionExpired,
    UpstreamTarget,
)
from gateway.runtime import CallOutcome, GatewayRuntime, ServedTool, UnknownTool
from gateway.stdio_pipes import stdio_pipes
from gateway.upstream_process import launcher_argv

INVALID_PARAMS = mt.INVALID_PARAMS
_LIST_CHANGED = NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)


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
        context = runtime.new_context(principal=_principal(runtime, ctx), transport="stdio")
    else:
        context = runtime.new_context(
            principal=_principal(runtime, ctx), transport="http", headers=dict(request.headers)
        )
    context.progress_sink = ctx.session.report_progress  # a no-op unless the caller asked for progress
    return context


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


def _tool_result(outcome: CallOutcome) -> mt.CallToolResult | dict[str, Any]:
    if outcome.content is None:
        return mt.CallToolResult(
            content=[mt.TextContent(type="text", text=outcome.text)],
            structured_content=None if outcome.is_error else outcome.body,
            is_error=outcome.is_error,
        )
    return wire.tool_result_json(outcome.content, outcome.structured, outcome.is_error)  # blocks as they came


def _protocol_error(err: ToolError) -> MCPError:
    code = INVALID_PARAMS if err.http_status < 500 else mt.INTERNAL_ERROR
    return MCPError(code, err.message, err.to_body()["error"])


class _GatewayServer(Server[Any]):
    """A lowlevel server that announces ``listChanged`` for tools, resources and prompts in the handshake era."""

    def create_initialization_options(self, notification_options: Any = None, *args: Any, **kwargs: Any) -> Any:
        return super().create_initialization_options(notification_options or _LIST_CHANGED, *args, **kwargs)


class _Announcer:
    """Tells connected clients that the catalogue changed: handshake-era connections on their standalone channel,
    2026-07-28 ones through their ``subscriptions/listen`` streams."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._peers: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()

    def seen(self, ctx: Any) -> None:
        session = ctx.session
        # The connection outlives each request's session object; the newest session reaches it.
        self._peers[getattr(session, "_connection", session)] = session

    async def changed(self) -> None:
        for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
            await self.bus.publish(event)
        for session in list(self._peers.values()):
            if session.protocol_version in MODERN_PROTOCOL_VERSIONS:
                continue  # served by the listen streams above
            try:
                await session.send_tool_list_changed()
                await session.send_prompt_list_changed()
                await session.send_resource_list_changed()
            except Exception:  # a client that went away: nothing to tell
                continue


def build_server(runtime: GatewayRuntime) -> Server[Any]:
    """A lowlevel SDK server whose handlers delegate to ``runtime`` (which must be started)."""
    tool_cache: dict[str, mt.Tool] = {}
    announcer = _Announcer()

    def refresh() -> None:
        tool_cache.clear()
        tool_cache.update({name: _mcp_tool(served) for name, served in runtime.tools.items()})

    refresh()
    alive = weakref.ref(announcer)

    async def on_catalogue_change() -> None:
        current = alive()
        if current is None:
            remove()
            return
        refresh()
        await current.changed()

    remove = runtime.add_catalogue_listener(on_catalogue_change)

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        announcer.seen(ctx)
        principal = _principal(runtime, ctx)
        return mt.ListToolsResult(
            tools=[tool_cache[s.name] for s in runtime.visible_tools(principal) if s.name in tool_cache]
        )

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult | dict[str, Any]:
        context = _new_context(runtime, ctx)
        try:
            outcome = await runtime.call_tool(params.name, params.arguments, context)
        except UnknownTool:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}") from None
        return _tool_result(outcome)

    # Results as SDK models (built from wire JSON): a model fills what each protocol era requires.
    async def list_resources(ctx: Any, params: Any) -> mt.ListResourcesResult:
        announcer.seen(ctx)
        resources = runtime.visible_resources(_principal(runtime, ctx))
        return mt.ListResourcesResult.model_validate({"resources": [wire.resource_json(r) for r in resources]})

    async def list_templates(ctx: Any, params: Any) -> mt.ListResourceTemplatesResult:
        found = [wire.template_json(t) for t in runtime.visible_templates(_principal(runtime, ctx))]
        return mt.ListResourceTemplatesResult.model_validate({"resourceTemplates": found})

    async def read_resource(ctx: Any, params: mt.ReadResourceRequestParams) -> mt.ReadResourceResult:
        uri = str(params.uri)
        try:
            contents = await runtime.read_resource(uri, _new_context(runtime, ctx))
        except ToolError as err:
            raise _protocol_error(err) from None
        return mt.ReadResourceResult.model_validate({"contents": [wire.contents_json(uri, c) for c in contents]})

    async def list_prompts(ctx: Any, params: Any) -> mt.ListPromptsResult:
        announcer.seen(ctx)
        prompts = runtime.visible_prompts(_principal(runtime, ctx))
        return mt.ListPromptsResult.model_validate({"prompts": [wire.prompt_json(n, p) for n, p in prompts]})

    async def get_prompt(ctx: Any, params: mt.GetPromptRequestParams) -> mt.GetPromptResult:
        try:
            result = await runtime.get_prompt(params.name, params.arguments, _new_context(runtime, ctx))
        except ToolError as err:
            raise _protocol_error(err) from None
        return mt.GetPromptResult.model_validate(wire.prompt_result_json(result))

    def tool_input_schema(name: str) -> dict[str, Any] | None:
        # The 2026-07-28 HTTP path checks a call's Mcp-Param headers against the tool's schema; without this it
        # runs a whole tools/list per call to find it (about 1 ms of the gateway's CPU per call).
        served = runtime.tools.get(name)
        return served.input_schema if served is not None else None

    server = _GatewayServer(
        runtime.name,
        version=__version__,
        instructions=runtime.instructions,
        get_tool_input_schema=tool_input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(announcer.bus),
    )
    server._gateway_announcer = announcer  # type: ignore[attr-defined]  # lives as long as the server
    return server


async def serve_stdio(runtime: GatewayRuntime) -> None:
    """Serve MCP over this process's stdin/stdout until the client closes the stream."""
    server = build_server(runtime)
    async with stdio_pipes() as pipes:
        stdin, stdout = pipes if pipes is not None else (None, None)  # files, not pipes: the SDK's own streams
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            await server.run(read_stream, write_stream, server.create_initialization_options())


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
    mt.ToolListChangedNotification: "tools",
    mt.ResourceListChangedNotification: "resources",
    mt.PromptListChangedNotification: "prompts",
    ToolsListChanged: "tools",
    ResourcesListChanged: "resources",
    PromptsListChanged: "prompts",
}


def _wire_json(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class SdkWire:
    """The SDK half of an upstream session (:class:`gateway.upstream_session.Wire`): the transport, the SDK's
    ``Client``, and requests answered as MCP wire JSON."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._expired = False

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

        @asynccontextmanager
        async def watched() -> AsyncIterator[Any]:
            async with transport as (read_stream, write_stream):
                yield watch(read_stream), write_stream

        async def on_message(message: Any) -> None:
            if (kind := _KINDS.get(type(message))) is not None:
                on_list_changed(kind)

        client = Client(watched(), mode=mode, message_handler=on_message, cache=None)  # type: ignore[arg-type]
        self._client = await stack.enter_async_context(client)

    @property
    def _live(self) -> Client:
        if self._client is None:
            raise UpstreamConnectionLost("not connected")
        return self._client

    @property
    def protocol_version(self) -> str:
        return self._live.protocol_version

    @property
    def offers(self) -> frozenset[ListKind]:
        caps = self._live.server_capabilities
        offered = {"tools": caps.tools, "resources": caps.resources, "prompts": caps.prompts}
        return frozenset(kind for kind, cap in offered.items() if cap is not None)  # type: ignore[misc]

    async def listen(self, on_list_changed: Callable[[ListKind], None]) -> None:
        client = self._live
        if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return  # the handshake era announces changes as notifications (``on_message`` above)
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                async for event in subscription:
                    if (kind := _KINDS.get(type(event))) is not None:
                        on_list_changed(kind)
        except Exception:  # the server refused the listen stream, or dropped it: its changes go unannounced
            return

    async def request(self, method: str, params: Mapping[str, Any], *, progress: ProgressSink | None = None) -> Any:
        client = self._live
        try:
            if method == "tools/call":
                return _wire_json(
                    await client.call_tool(params["name"], params["arguments"], progress_callback=progress)
                )
            if method == "resources/read":
                return _wire_json(await client.read_resource(params["uri"]))
            if method == "prompts/get":
                return _wire_json(await client.get_prompt(params["name"], params["arguments"]))
            lister = {
                "tools/list": client.list_tools,
                "resources/list": client.list_resources,
                "resources/templates/list": client.list_resource_templates,
                "prompts/list": client.list_prompts,
            }[method]
            return _wire_json(await lister(cursor=params.get("cursor")))
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
