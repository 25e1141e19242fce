"""The direct exchange for a ``tools/call`` to a stdio upstream: the request written on the SDK's transport, its
answer claimed off the transport's read stream before the SDK's client reads it.

Over stdio the gateway keeps the SDK's transport (it starts and stops the process and encodes and decodes each
line) and the SDK's client for everything else: the handshake, listings, resources, prompts, calls with progress,
and whatever the server asks of its client. The client's per-request machinery (a dispatcher entry and a stream per
request, a tracing span, the result validated as it arrives and again against the tool's output schema, which the
gateway's pipeline checks anyway) costs more CPU than the exchange itself. A tool call that asked for no progress
needs none of it: one request, one response matched by its id. Direct requests are numbered ``gateway-<n>``, ids
the SDK's client (which numbers its requests with integers) never uses, so their answers never reach it; an
answer to an abandoned call is dropped the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from gateway.api.upstream import UpstreamConnectionLost, UpstreamRequestFailed
from gateway.mcp_adapter.sdk import SessionMessage, mt
from gateway.upstream_session import EofWatch

__all__ = ["ID_PREFIX", "StdioCalls", "claiming"]

ID_PREFIX = "gateway-"
ABANDON_SECONDS = 2.0
"""How long telling the server that a call was abandoned may wait for the transport to take the notice."""


class StdioCalls:
    """``tools/call`` requests written on a stdio transport's write stream; their answers are taken off its read
    stream by :meth:`claim` (an :class:`EofWatch` divert), and every call still waiting fails once it ends."""

    def __init__(self, write_stream: Any) -> None:
        self._write = write_stream
        self._meta: dict[str, Any] | None = None
        self._pending: dict[str, asyncio.Future[mt.JSONRPCResponse | mt.JSONRPCError]] = {}
        self._ids = itertools.count(1)
        self._ended = False

    def use_envelope(self, meta: Mapping[str, Any] | None) -> None:
        """Send ``meta`` as each request's ``params._meta`` (the 2026-07-28 envelope; None in the handshake era)."""
        self._meta = dict(meta) if meta is not None else None

    def claim(self, item: Any) -> bool:
        """Whether ``item`` (read off the transport) answers a direct request; if so it is delivered here."""
        message = item.message if isinstance(item, SessionMessage) else None
        if not isinstance(message, mt.JSONRPCResponse | mt.JSONRPCError):
            return False
        if not isinstance(message.id, str) or not message.id.startswith(ID_PREFIX):
            return False
        future = self._pending.pop(message.id, None)
        if future is not None and not future.done():
            future.set_result(message)
        return True

    def end(self) -> None:
        """The transport's read stream ended: every call still waiting fails."""
        self._ended = True
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(UpstreamConnectionLost("the connection ended"))

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The ``tools/call`` result as wire JSON; raises the errors of :mod:`gateway.api.upstream`."""
        if self._ended:
            raise UpstreamConnectionLost("the connection ended")
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        params: dict[str, Any] = {"name": name, "arguments": dict(arguments)}
        if self._meta is not None:
            params["_meta"] = self._meta
        answer = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            try:
                await self._write.send(
                    SessionMessage(mt.JSONRPCRequest(jsonrpc="2.0", id=request_id, method="tools/call", params=params))
                )
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                raise UpstreamConnectionLost("the connection ended") from None
            message = await answer
        except anyio.get_cancelled_exc_class():
            await self._abandon(request_id)
            raise
        finally:
            self._pending.pop(request_id, None)
        if isinstance(message, mt.JSONRPCError):
            error = message.error
            raise UpstreamRequestFailed(error.message, code=error.code, data=error.data)
        return message.result

    async def _abandon(self, request_id: str) -> None:
        """Ask the server to stop working on an abandoned call, as the SDK's client does (``notifications/cancelled``;
        a server ignores it for a request it never received)."""
        notice = mt.JSONRPCNotification(
            jsonrpc="2.0",
            method="notifications/cancelled",
            params={"requestId": request_id, "reason": "the gateway abandoned the call"},
        )
        with anyio.CancelScope(shield=True), anyio.move_on_after(ABANDON_SECONDS):
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._write.send(SessionMessage(notice))


@asynccontextmanager
async def claiming(transport: Any, ready: Callable[[StdioCalls], None]) -> AsyncIterator[tuple[Any, Any]]:
    """``transport`` (the SDK's stdio transport) with a :class:`StdioCalls` on its streams, handed to ``ready``."""
    async with transport as (read_stream, write_stream):
        calls = StdioCalls(write_stream)
        ready(calls)
        try:
            yield EofWatch(read_stream, calls.end, divert=calls.claim), write_stream
        finally:
            calls.end()  # closed by the session rather than by the server: nothing still waiting may hang
