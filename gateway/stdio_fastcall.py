"""The gateway answering the most frequent MCP exchange itself on stdio: a 2026-07-28 ``tools/call``.

The stdio counterpart of :mod:`gateway.http_fastcall`. On a 2026-07-28 connection every request carries its own
envelope, so a tool call that asked for neither progress nor log messages needs nothing of the connection but its
answer. The SDK's server (its reader, dispatcher, per-request objects and writer, with pydantic at each step) costs
the gateway more CPU for such a call than the gateway's own work for it. :class:`FastStdioCalls` looks at each line
before the SDK does and runs such a call itself, beside the SDK's server on the same connection; every other line
(the handshake era, progress, listings, resources, prompts, any request the SDK would refuse or shape differently)
goes to the SDK unchanged. The protocol's rules (the envelope ladder, the answer's shape and error codes) come from
the same :class:`~gateway.http_fastcall.Exchange` as on HTTP, implemented with the SDK's own functions.

As the SDK decides, the client's first request decides the connection's era: a request with the envelope (other
than ``initialize``) opens a 2026-07-28 connection; anything else a handshake-era one, where nothing is answered
here. ``notifications/cancelled`` naming a call running here cancels it, and a cancelled call is not answered.
"""

from __future__ import annotations

import anyio
import orjson
from anyio.abc import TaskGroup

from gateway.http_fastcall import Admitted, Exchange
from gateway.runtime import GatewayRuntime
from gateway.stdio_pipes import LineSink

__all__ = ["FastStdioCalls"]


class FastStdioCalls:
    """Takes eligible ``tools/call`` lines off a stdio connection and answers them on ``sink``."""

    def __init__(self, runtime: GatewayRuntime, exchange: Exchange, sink: LineSink, task_group: TaskGroup) -> None:
        self._runtime = runtime
        self._exchange = exchange
        self._sink = sink
        self._tasks = task_group
        self._modern: bool | None = None
        """The connection's era, once its first request has decided it."""
        self._running: dict[str | int, anyio.CancelScope] = {}

    def take(self, line: str) -> bool:
        """Whether ``line`` is handled here (a call now running beside the SDK's server, or its cancellation);
        when False the SDK reads it."""
        if self._modern is False:
            return False
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False
        if not isinstance(message, dict):
            return False
        method = message.get("method")
        if self._modern is None:  # the SDK decides the era from the same line
            self._modern = self._exchange.opens_modern(message)
            return False
        if method == "notifications/cancelled":
            params = message.get("params")
            scope = self._running.get(params.get("requestId")) if isinstance(params, dict) else None
            if scope is None:
                return False
            scope.cancel()
            return True
        if method != "tools/call" or message.get("id") in self._running:
            return False
        admitted = self._exchange.admit_message(message)
        if admitted is None:
            return False
        scope = anyio.CancelScope()
        self._running[admitted.request_id] = scope
        self._tasks.start_soon(self._serve, admitted, scope)
        return True

    async def _serve(self, call: Admitted, scope: anyio.CancelScope) -> None:
        principal = self._runtime.default_principal
        assert principal is not None
        try:
            with scope:
                try:
                    result = await self._exchange.call(call, principal, {}, "stdio")
                except Exception as exc:
                    payload = self._exchange.failure(call.request_id, exc)[1]
                else:
                    payload = self._exchange.answer(call, result)
        finally:
            self._running.pop(call.request_id, None)
        if scope.cancelled_caught:
            return  # cancelled by the client: a cancelled request is not answered
        try:
            await self._sink.write(payload.decode() + "\n")
            await self._sink.flush()
        except OSError:
            return  # the client closed stdout: nobody to answer (the SDK's reader sees the end)
