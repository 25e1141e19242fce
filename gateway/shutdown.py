"""Stopping a served gateway on ``SIGINT``/``SIGTERM``: serving ends, then the runtime stops (packs and providers
close, so stores are flushed and closed), then the process ends the way the signal would have ended it.

Without this, ``SIGTERM`` killed the process on the spot (stores left unflushed, SQLite WALs uncheckpointed), and a
stdio server whose stdin stayed open had no other way to stop. The first signal stops serving: gracefully where the
transport can (uvicorn finishes the requests in flight), otherwise by cancelling it (an MCP stdio session: calls in
flight are cancelled, their transactions roll back). A second stop signal ends the process at once, for an operator
whose shutdown hangs.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import structlog

log = structlog.get_logger(__name__)

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class ShutdownSignals:
    """What a served gateway does when asked to stop (see the module doc); built by :func:`shutdown_signals`."""

    def __init__(self) -> None:
        self.received: int | None = None
        """The first stop signal received, if any."""
        self._graceful: Callable[[], None] | None = None
        self._scope: anyio.CancelScope | None = None

    async def starting(self, start: Callable[[], Awaitable[T]]) -> T | None:
        """``await start()`` (the runtime starting: a pack may wait long for a server it fronts) unless a stop signal
        comes first; then the start is abandoned (what it started is stopped) and ``None`` returned."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.received is None:
                started = await start()
                self._scope = None
                return started
        self._scope = None
        return None

    async def serve(self, serve: Callable[[], Awaitable[None]]) -> None:
        """Run ``serve()`` until it returns or a stop signal arrives."""
        with anyio.CancelScope() as scope:
            self._scope = scope
            if self.received is None:
                await serve()
        self._scope = None

    def stop_gracefully_with(self, stop: Callable[[], None]) -> None:
        """Once serving is under way: a stop signal calls ``stop()`` (which must end serving) instead of cancelling."""
        self._graceful = stop

    def deliver(self, signum: int) -> None:
        """Act on a stop signal (called by the watcher task; public so tests can drive it)."""
        name = signal.Signals(signum).name
        if self.received is not None:
            log.warning("second stop signal: exiting without finishing the shutdown", signal=name)
            _flush_streams()
            os._exit(128 + signum)
        self.received = signum
        log.info("stopping", signal=name)
        if self._graceful is not None and self._scope is not None:
            self._graceful()
        elif self._scope is not None:
            self._scope.cancel()


@asynccontextmanager
async def shutdown_signals() -> AsyncIterator[ShutdownSignals]:
    """Catch ``SIGINT`` and ``SIGTERM`` (main thread only) for the duration of the block, serving included."""
    shutdown = ShutdownSignals()
    with anyio.open_signal_receiver(*STOP_SIGNALS) as received:
        async with anyio.create_task_group() as group:

            async def watch() -> None:
                async for signum in received:
                    shutdown.deliver(signum)

            group.start_soon(watch)
            try:
                yield shutdown
            finally:
                group.cancel_scope.cancel()


def exit_by(signum: int) -> None:
    """End the process as ``signum`` would have (the parent sees the signal; a shell reports 128 + signum), now
    that the gateway has shut down cleanly. Does not return."""
    _flush_streams()
    logging.shutdown()
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    sys.exit(128 + signum)  # only if the signal was blocked


def _flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
