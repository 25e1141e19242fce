"""The gateway answering the most frequent MCP exchange itself on stdio: a 2026-07-28 ``tools/call``.

The stdio counterpart of :mod:`gateway.http_fastcall`. On a 2026-07-28 connection every request carries its own
envelope, so a tool call that asked for neither progress nor log messages needs nothing of the connection but its
answer. The SDK's server (its reader, dispatcher, per-request objects and writer, with pydantic at each step) costs
the gateway more CPU for such a call than the gateway's own work for it. :class:`FastStdioCalls` looks at each line
before the SDK does and runs such a call itself, beside the SDK's server on the same connection; every other line
(the handshake era, progress, listings, resources, prompts, any request the SDK would refuse or shape differently)
goes to the SDK unchanged. Lines are read as the SDK reads them, and the protocol's rules (the envelope ladder, the
answer's shape and error codes, how ids correlate) come from a :class:`StdioExchange` implemented with the SDK's own
functions (:mod:`gateway.mcp_adapter.exchange`), so the two paths cannot disagree on them.

As the SDK decides, the client's first request decides the connection's era: a request with the envelope (other
than ``initialize``) opens a 2026-07-28 connection, anything else a handshake-era one, where nothing is answered
here. As the SDK's dispatcher does: ``notifications/cancelled`` naming a call running here cancels it and the call is
not answered; calls still running when the connection ends are answered with the "Connection closed" error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup

from gateway.http_fastcall import Admitted, Exchange
from gateway.runtime import GatewayRuntime
from gateway.stdio_pipes import LineSink

__all__ = ["FastStdioCalls", "StdioExchange"]

CLOSING_WRITE_SECONDS = 2.0
"""How long the answer to a call cut short by the connection's end may wait for the client to take it."""


class StdioExchange(Exchange, Protocol):
    """What the stdio direct path needs besides :class:`Exchange`: lines read as the SDK's stdio server reads them."""

    def read(self, line: str) -> Any | None:
        """The JSON-RPC message ``line`` carries, or None when it carries none (the line checks answer it)."""

    def opens_modern(self, message: Any) -> bool | None:
        """For a connection's messages until this decides: whether ``message`` opens a 2026-07-28 connection (a
        request with the envelope, other than ``initialize``) or a handshake-era one; None when it is not a request
        (it decides nothing)."""

    def admit_message(self, message: Any) -> Admitted | None:
        """The call when ``message`` is a 2026-07-28 ``tools/call`` that asked for no progress and no logs and that
        the SDK would accept, else None."""

    def cancelled_key(self, message: Any) -> str | int | None:
        """The correlation key of the request a ``notifications/cancelled`` names, else None."""

    def request_key(self, request_id: str | int) -> str | int:
        """The key requests correlate by (the SDK's: ``"7"`` and ``7`` are one)."""

    def closed(self, request_id: str | int) -> bytes:
        """The error answering a request still running when the connection ended."""


@dataclass(eq=False)
class _Running:
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """The call's own scope, once it runs."""
    queued: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Its wait for a free slot (:data:`MAX_RUNNING`)."""
    cancelled_by_client: bool = False

    def cancel(self) -> None:
        self.queued.cancel()
        self.scope.cancel()


MAX_RUNNING = 64
"""Calls of one stdio client that run at once; more wait their turn. The answers a client does not read stay within
this many (a client writing faster than it reads is slowed by the pipe, not held in memory), while stdin is still
read (a cancellation of a waiting call is seen at once)."""


class FastStdioCalls:
    """Takes eligible ``tools/call`` lines off a stdio connection and answers them on ``sink``."""

    def __init__(self, runtime: GatewayRuntime, exchange: StdioExchange, sink: LineSink, task_group: TaskGroup) -> None:
        self._runtime = runtime
        self._exchange = exchange
        self._sink = sink
        self._tasks = task_group
        self._modern: bool | None = None
        """The connection's era, once its first request has decided it."""
        self._running: dict[str | int, _Running] = {}
        self._busy = 0
        """Calls taken and not yet answered (their answer written or given up)."""
        self._idle = anyio.Event()
        self._slots = anyio.Semaphore(MAX_RUNNING)

    def take(self, line: str) -> bool:
        """Whether ``line`` is handled here (a call now running beside the SDK's server); when False the SDK
        reads it."""
        if self._modern is False:
            return False
        message = self._exchange.read(line)
        if message is None:
            return False
        if self._modern is None:  # the SDK decides the era from the same message
            self._modern = self._exchange.opens_modern(message)
            return False
        if (key := self._exchange.cancelled_key(message)) is not None:
            if (running := self._running.get(key)) is not None:
                running.cancelled_by_client = True
                running.cancel()
            return False  # the SDK reads the notice too (it ignores ids it is not running)
        admitted = self._exchange.admit_message(message)
        if admitted is None or (key := self._exchange.request_key(admitted.request_id)) in self._running:
            return False  # a repeated id in flight: the SDK's rules for it apply
        running = self._running[key] = _Running()
        self._busy += 1
        self._tasks.start_soon(self._serve, admitted, key, running)
        return True

    async def settled(self) -> None:
        """Return once every call taken here has been answered."""
        while self._busy:
            await self._idle.wait()

    def close(self) -> None:
        """The connection ended: calls still running are cut short and answered "Connection closed"."""
        for running in self._running.values():
            running.cancel()

    async def _serve(self, call: Admitted, key: str | int, running: _Running) -> None:
        try:
            with running.queued:
                await self._slots.acquire()
            if running.queued.cancelled_caught:  # cancelled by its client, or the connection ended, while waiting
                if self._running.get(key) is running:
                    del self._running[key]
                if not running.cancelled_by_client:
                    await self._write(self._exchange.closed(call.request_id), shielded=True)
                return
            try:
                await self._answer(call, key, running)
            finally:
                self._slots.release()
        finally:
            self._busy -= 1
            if not self._busy:
                self._idle.set()
                self._idle = anyio.Event()

    async def _answer(self, call: Admitted, key: str | int, running: _Running) -> None:
        principal = self._runtime.default_principal
        assert principal is not None
        payload: bytes | None = None
        try:
            with running.scope:
                try:
                    result = await self._exchange.call(call, principal, {}, "stdio")
                except Exception as exc:
                    payload = self._exchange.failure(call.request_id, exc)[1]
                else:
                    payload = self._exchange.answer(call, result)
        except anyio.get_cancelled_exc_class():  # the server is stopping
            if not running.cancelled_by_client:
                await self._write(self._exchange.closed(call.request_id), shielded=True)
            raise
        finally:
            if self._running.get(key) is running:
                del self._running[key]
        if running.cancelled_by_client:
            return  # a cancelled request is not answered, even by a tool that finished regardless
        if payload is None:  # cut short by close()
            await self._write(self._exchange.closed(call.request_id), shielded=True)
        else:
            await self._write(payload, shielded=False)

    async def _write(self, payload: bytes, *, shielded: bool) -> None:
        with anyio.CancelScope(shield=shielded) as scope:
            if shielded:
                scope.deadline = anyio.current_time() + CLOSING_WRITE_SECONDS
            try:
                await self._sink.write(payload.decode() + "\n")
                await self._sink.flush()
            except OSError:
                return  # the client closed stdout: nobody to answer
