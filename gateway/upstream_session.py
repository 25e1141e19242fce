"""One connection to an upstream MCP server, as :class:`gateway.api.UpstreamSession`: its lifetime and its answers.

The SDK's transports must be entered and left by a single task, while a gateway sends requests from many, so a
session keeps its connection open in a task of its own and ends it when asked or when the connection drops (the
server process exited). The SDK half — transports, the ``Client``, one request in and its result out as MCP wire
JSON — is a :class:`Wire` that :mod:`gateway.mcp_adapter` provides; this module turns wire JSON into the
``gateway.api`` types, so it depends on the protocol, not on the SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import IO, Any, Protocol

import anyio
import structlog

from gateway import wire
from gateway.api.context import ProgressSink
from gateway.api.resources import PromptResult, ResourceContent
from gateway.api.tools import ToolResult
from gateway.api.upstream import (
    HttpTarget,
    ListKind,
    RemotePrompt,
    RemoteResource,
    RemoteResourceTemplate,
    RemoteTool,
    UpstreamConnectionLost,
    UpstreamTarget,
)
from gateway.upstream_process import StderrPump

__all__ = ["EofWatch", "Wire", "WireConnector", "WireSession", "watched"]

PAGE_CAP = 100
"""At most this many pages per listing: a server whose cursor never ends cannot hang the gateway."""

log = structlog.get_logger(__name__)


class Wire(Protocol):
    """The SDK half of a session. Requests raise the errors of :mod:`gateway.api.upstream`."""

    async def open(
        self,
        stack: AsyncExitStack,
        target: UpstreamTarget,
        *,
        watch: Callable[[Any], Any],
        on_list_changed: Callable[[ListKind], None],
        stderr: IO[bytes] | None,
    ) -> None:
        """Connect and complete the handshake; whatever must be left on close goes on ``stack``. ``watch`` wraps
        the transport's read stream; ``stderr`` receives a stdio server's stderr."""

    offers: frozenset[ListKind]
    """What the server's capabilities advertise (set by :meth:`open`)."""

    @property
    def protocol_version(self) -> str: ...

    async def listen(self, on_list_changed: Callable[[ListKind], None]) -> None:
        """Deliver list changes the 2026-07-28 way (a ``subscriptions/listen`` stream) until cancelled; return at
        once when the connection's era announces them as notifications."""

    async def request(
        self, method: str, params: Mapping[str, Any], *, progress: ProgressSink | None = None
    ) -> dict[str, Any]:
        """One MCP request (``tools/list``, ``tools/call``...); the result as MCP wire JSON."""


class EofWatch:
    """A transport's read stream that reports its end (the server process exited, the connection dropped) and,
    given ``divert``, withholds from its reader the items ``divert`` takes (answers to requests sent around it)."""

    def __init__(self, inner: Any, on_eof: Callable[[], None], divert: Callable[[Any], bool] | None = None) -> None:
        self._inner = inner
        self._on_eof = on_eof
        self._divert = divert

    def __getattr__(self, name: str) -> Any:  # ``last_context`` and whatever else a reader looks for
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        while True:
            try:
                item = await self._inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._on_eof()
                raise
            if self._divert is None or not self._divert(item):
                return item

    def __aiter__(self) -> EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> EofWatch:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@asynccontextmanager
async def watched(transport: Any, watch: Callable[[Any], Any]) -> AsyncIterator[Any]:
    """``transport`` (an async context manager yielding its read and write streams) with its read stream wrapped
    by ``watch``."""
    async with transport as (read_stream, write_stream):
        yield watch(read_stream), write_stream


class WireSession:
    """:class:`gateway.api.UpstreamSession` over a :class:`Wire`, kept open by a task of its own."""

    def __init__(
        self, name: str, target: UpstreamTarget, wire: Wire, on_list_changed: Callable[[ListKind], None] | None
    ) -> None:
        self.name = name
        self.target = target
        self._wire = wire
        self._on_list_changed = on_list_changed or (lambda kind: None)
        self._ready = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._connected = False
        self._closing = False
        self._reason: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def open(self, connect_timeout: float) -> None:
        """Connect within ``connect_timeout`` seconds or raise :class:`UpstreamConnectionLost`."""
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"upstream {self.name}")
        try:
            with anyio.move_on_after(connect_timeout):
                await self._ready.wait()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise
        if not self._connected:
            reason = self._reason or f"no answer within {connect_timeout:g} s"
            with anyio.CancelScope(shield=True):
                await self.aclose()
            raise UpstreamConnectionLost(f"cannot connect to upstream {self.name!r}: {reason}")

    async def _run(self) -> None:
        pump = None if isinstance(self.target, HttpTarget) else StderrPump(self.name, self.target.secrets)
        try:
            async with AsyncExitStack() as stack:
                await self._wire.open(
                    stack,
                    self.target,
                    watch=lambda stream: EofWatch(stream, self._lost),
                    on_list_changed=self._on_list_changed,
                    stderr=pump.writer if pump is not None else None,
                )
                if pump is not None:
                    pump.spawned()
                self._connected = True
                self._ready.set()
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._wire.listen, self._on_list_changed)
                    await self._stop.wait()
                    tg.cancel_scope.cancel()
        except Exception as exc:
            self._reason = self._reason or _describe(exc)
        finally:
            self._connected = False
            if pump is not None:
                pump.close()
                if not self._closing and pump.finished(0.5) and pump.tail:  # it ended by itself: its last words
                    self._reason = f"{self._reason or 'the server exited'}; its stderr: {' | '.join(pump.tail)}"
            self._stop.set()
            self._ready.set()
            self._done.set()

    def _lost(self) -> None:
        if not self._stop.is_set():
            self._reason = self._reason or "the connection ended"
            self._stop.set()

    # -- the UpstreamSession protocol --

    @property
    def protocol_version(self) -> str:
        return self._wire.protocol_version

    @property
    def offers(self) -> frozenset[ListKind]:
        return self._wire.offers

    @property
    def closed(self) -> bool:
        return self._stop.is_set() or not self._connected

    @property
    def close_reason(self) -> str | None:
        return self._reason

    async def wait_closed(self) -> None:
        await self._done.wait()

    async def aclose(self) -> None:
        self._closing = True
        self._stop.set()
        if self._task is not None:
            if not self._connected:  # still opening (a server that never answers): nothing else would end it
                self._task.cancel()
            await self._done.wait()

    async def _request(
        self, method: str, params: Mapping[str, Any], progress: ProgressSink | None = None
    ) -> dict[str, Any]:
        if self.closed:
            raise UpstreamConnectionLost(f"upstream {self.name!r} is not connected: {self._reason or 'closed'}")
        try:
            return await self._wire.request(method, params, progress=progress)
        except UpstreamConnectionLost as exc:
            self._reason = self._reason or str(exc)
            self._stop.set()
            raise

    async def _listing(self, method: str, key: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(PAGE_CAP):
            page = await self._request(method, {"cursor": cursor} if cursor else {})
            items += page.get(key) or []
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return items

    async def list_tools(self) -> list[RemoteTool]:
        tools = []
        for tool in await self._listing("tools/list", "tools"):
            if wire.needs_task(tool):  # only a task-augmented call can succeed, and the gateway makes none
                log.warning("upstream tool left out: it requires task execution", upstream=self.name, tool=tool["name"])
                continue
            tools.append(wire.remote_tool(tool))
        return tools

    async def list_resources(self) -> list[RemoteResource]:
        return [wire.remote_resource(r) for r in await self._listing("resources/list", "resources")]

    async def list_resource_templates(self) -> list[RemoteResourceTemplate]:
        found = await self._listing("resources/templates/list", "resourceTemplates")
        return [wire.remote_template(t) for t in found]

    async def list_prompts(self) -> list[RemotePrompt]:
        return [wire.remote_prompt(p) for p in await self._listing("prompts/list", "prompts")]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, progress: ProgressSink | None = None
    ) -> ToolResult:
        return wire.tool_result(
            await self._request("tools/call", {"name": name, "arguments": dict(arguments)}, progress)
        )

    async def read_resource(self, uri: str) -> list[ResourceContent]:
        return wire.resource_contents(await self._request("resources/read", {"uri": uri}))

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> PromptResult:
        return wire.prompt_result(await self._request("prompts/get", {"name": name, "arguments": dict(arguments)}))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class WireConnector:
    """:class:`gateway.api.UpstreamConnector` whose sessions run over wires from ``wire_factory``."""

    def __init__(self, wire_factory: Callable[[], Wire]) -> None:
        self._wire_factory = wire_factory

    async def connect(
        self,
        name: str,
        target: UpstreamTarget,
        *,
        connect_timeout: float,
        on_list_changed: Callable[[ListKind], None] | None = None,
    ) -> WireSession:
        session = WireSession(name, target, self._wire_factory(), on_list_changed)
        await session.open(connect_timeout)
        return session
