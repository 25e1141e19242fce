"""The SDK half of an upstream session (:class:`gateway.upstream_session.Wire`): the transport and the SDK's
``Client`` for the handshake, listings, resources, prompts and calls with progress. Tool calls without progress
skip the client: over HTTP (2026-07-28) through :class:`gateway.upstream_http.DirectCalls`, over stdio (both eras)
through :class:`gateway.mcp_adapter.stdio_calls.StdioCalls`, with the envelope the SDK defines."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack
from typing import Any, Protocol

import anyio
from pydantic import ValidationError

from gateway import __version__
from gateway.api.context import ProgressSink
from gateway.api.upstream import (
    HttpTarget,
    ListKind,
    UpstreamConnectionLost,
    UpstreamRequestFailed,
    UpstreamSessionExpired,
    UpstreamTarget,
)
from gateway.mcp_adapter.listings import LISTINGS, read_page
from gateway.mcp_adapter.sdk import (
    MCP_NAME_HEADER,
    MODERN_PROTOCOL_VERSIONS,
    Client,
    MCPError,
    PromptsListChanged,
    ResourcesListChanged,
    StdioServerParameters,
    ToolsListChanged,
    encode_header_value,
    httpx2,
    mcp_param_headers,
    mt,
    stdio_client,
    streamable_http_client,
    x_mcp_header_map,
)
from gateway.mcp_adapter.stdio_calls import StdioCalls, claiming
from gateway.upstream_http import DirectCalls
from gateway.upstream_process import launcher_argv
from gateway.upstream_session import watched

_KINDS: dict[type, ListKind] = {
    **dict.fromkeys((mt.ToolListChangedNotification, ToolsListChanged), "tools"),
    **dict.fromkeys((mt.ResourceListChangedNotification, ResourcesListChanged), "resources"),
    **dict.fromkeys((mt.PromptListChangedNotification, PromptsListChanged), "prompts"),
}


_CLIENT_INFO = mt.Implementation(name="mcp-gateway", version=__version__)

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The largest server-sent event an HTTP upstream's answer may hold, in both eras (the SDK's default, 1 MiB, would
refuse a result the same server answers as plain JSON); a larger one fails its call with ``upstream_error``."""
_EVENT_TOO_LARGE = "byte limit"
"""In the SDK's message for an event past the limit (``Server-sent event exceeded the N byte limit.``)."""


def _checked_tool_result(answer: dict[str, Any]) -> dict[str, Any]:
    """A direct call's result, refused as the SDK's client would refuse it (not a complete ``CallToolResult``)."""
    if answer.get("resultType", "complete") != "complete":
        raise UpstreamRequestFailed(f"the server answered {answer.get('resultType')!r}, which a gateway cannot give")
    try:
        mt.CallToolResult.model_validate(answer, by_name=False)
    except ValidationError as exc:
        raise UpstreamRequestFailed(f"the server's answer is not a tool result: {exc.errors()[0]['msg']}") from None
    return answer


class _ToolCalls(Protocol):
    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]: ...


def _envelope(version: str) -> dict[str, Any]:
    """``params._meta`` of a 2026-07-28 request from this client, as the SDK's client stamps it."""
    return {
        mt.PROTOCOL_VERSION_META_KEY: version,
        mt.CLIENT_INFO_META_KEY: _CLIENT_INFO.model_dump(mode="json", exclude_none=True),
        mt.CLIENT_CAPABILITIES_META_KEY: {},  # as this client's: no sampling, elicitation or roots
    }


class SdkWire:
    """The SDK half of an upstream session (:class:`gateway.upstream_session.Wire`): the transport, the SDK's
    ``Client``, and requests answered as MCP wire JSON."""

    def __init__(self) -> None:
        self._client: Any = None
        self._expired = False
        self._direct: _ToolCalls | None = None
        self._stdio: StdioCalls | None = None
        self._header_maps: dict[str, dict[tuple[str, ...], str]] = {}
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
                # 404 is the protocol's answer to a session the server no longer knows; the TypeScript SDK's server
                # answers 400 "No valid session ID provided". Another 400 (a malformed request) is not an expiry.
                if not response.request.headers.get("mcp-session-id"):
                    return
                if response.status_code == 404:
                    self._expired = True
                elif response.status_code == 400:
                    body = await response.aread()  # kept: the SDK reads the same body afterwards
                    if b"session" in body[:2000].lower():
                        self._expired = True

            http = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(target.headers),  # the configured ones only: nothing of the gateway's caller
                    timeout=httpx2.Timeout(30.0, read=300.0),
                    event_hooks={"response": [note_expiry]},
                )
            )
            transport: Any = streamable_http_client(target.url, http_client=http, max_sse_event_size=MAX_EVENT_BYTES)
            mode = target.protocol
        else:
            executable, args = launcher_argv(target.command)
            params = StdioServerParameters(command=executable, args=args, env=dict(target.env), cwd=target.cwd)
            transport, mode = claiming(stdio_client(params, errlog=stderr), self._use_stdio_calls), "auto"

        async def on_message(message: Any) -> None:
            if (kind := _KINDS.get(type(message))) is not None:
                on_list_changed(kind)

        client = Client(
            watched(transport, watch), mode=mode, message_handler=on_message, cache=None, client_info=_CLIENT_INFO
        )  # type: ignore[arg-type]
        self._client = await stack.enter_async_context(client)
        caps = client.server_capabilities
        offered: dict[ListKind, Any] = {"tools": caps.tools, "resources": caps.resources, "prompts": caps.prompts}
        self.offers = frozenset(kind for kind, cap in offered.items() if cap is not None)
        modern = client.protocol_version in MODERN_PROTOCOL_VERSIONS
        if isinstance(target, HttpTarget) and modern:
            self._direct = await self._direct_calls(stack, target, client.protocol_version)
        elif self._stdio is not None:
            self._stdio.use_envelope(_envelope(client.protocol_version) if modern else None)
            self._direct = self._stdio

    def _use_stdio_calls(self, calls: StdioCalls) -> None:
        self._stdio = calls

    async def _direct_calls(self, stack: AsyncExitStack, target: HttpTarget, version: str) -> DirectCalls:
        """Tool calls without progress go over :class:`DirectCalls`, with the envelope and headers the SDK's
        client would send."""

        def routing(name: str, arguments: Mapping[str, Any]) -> dict[str, str]:
            headers = mcp_param_headers(self._header_maps.get(name, {}), arguments)
            return {MCP_NAME_HEADER: encode_header_value(name), **headers}

        direct = DirectCalls(
            target.url,
            target.headers,
            protocol_version=version,
            meta=_envelope(version),
            routing=routing,
            max_event_bytes=MAX_EVENT_BYTES,
        )
        await direct.start()
        stack.push_async_callback(direct.aclose)
        return direct

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
        if method == "tools/call" and progress is None and self._direct is not None:
            return _checked_tool_result(await self._direct.call_tool(params["name"], params["arguments"]))
        client, cursor = self._client, params.get("cursor")
        calls = {
            "tools/call": lambda: client.call_tool(params["name"], params["arguments"], progress_callback=progress),
            "resources/read": lambda: client.read_resource(params["uri"]),
            "prompts/get": lambda: client.get_prompt(params["name"], params["arguments"]),
        }
        try:
            # A listing is read entry by entry: an entry the SDK refuses is left out, not the whole page.
            pending = read_page(client, method, cursor) if method in LISTINGS else calls[method]()
            answer = (await pending).model_dump(mode="json", by_alias=True, exclude_none=True)
            if method == "tools/list":  # the SDK's client kept the tools whose x-mcp-header annotations are valid
                self._header_maps.update((t["name"], x_mcp_header_map(t.get("inputSchema"))) for t in answer["tools"])
            return answer
        except MCPError as exc:
            if self._expired:
                raise UpstreamSessionExpired(f"the server no longer knows the session: {exc.message}") from None
            if exc.code == mt.CONNECTION_CLOSED and _EVENT_TOO_LARGE in exc.message:  # the session is fine
                raise UpstreamRequestFailed(f"the answer exceeds {MAX_EVENT_BYTES} bytes: {exc.message}") from None
            if exc.code == mt.CONNECTION_CLOSED:
                raise UpstreamConnectionLost(exc.message) from None
            raise UpstreamRequestFailed(exc.message, code=exc.code, data=exc.data) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            raise UpstreamConnectionLost("the connection ended") from exc
        except (RuntimeError, ValueError) as exc:  # a result the SDK refused (e.g. against the output schema)
            raise UpstreamRequestFailed(str(exc)) from None
