"""A watch on the event loop: a tool that blocks it (``time.sleep``, a blocking client, heavy CPU inside an
``async def``) stalls every other call, the health check included, and nothing in the calls' own logs says why.

A daemon thread asks the loop for a heartbeat every few tenths of a second. When the loop has not answered for
``threshold`` seconds, the watch logs one warning for that stall, naming the tool calls in flight and where the
loop's thread is stuck (the innermost frames of its stack), and one more line when the loop answers again. It
only observes: nothing is interrupted.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

import structlog

log = structlog.get_logger(__name__)

FRAMES = 4
"""How many of the stuck thread's innermost frames a warning names."""


def innermost_frames(frame: FrameType | None, count: int = FRAMES) -> list[str]:
    """``file:line in function`` for ``frame`` and its callers, innermost first, at most ``count``."""
    where = []
    while frame is not None and len(where) < count:
        where.append(f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}")
        frame = frame.f_back
    return where


class LoopWatch:
    """Warns when ``loop`` stops answering for ``threshold`` seconds; ``in_flight()`` names the calls running."""

    def __init__(self, loop: asyncio.AbstractEventLoop, threshold: float, in_flight: Callable[[], list[str]]) -> None:
        self._loop = loop
        self._threshold = threshold
        self._in_flight = in_flight
        self._loop_thread = threading.get_ident()
        self._answered = time.monotonic()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="gateway-loop-watch", daemon=True)

    def start(self) -> None:
        """Start watching (call from the loop's own thread)."""
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        self._answered = time.monotonic()

    def _watch(self) -> None:
        interval = min(0.25, self._threshold / 4)
        stalled_since: float | None = None
        while not self._stopping.wait(interval):
            try:
                self._loop.call_soon_threadsafe(self._beat)
            except RuntimeError:  # the loop is closed
                return
            silent = time.monotonic() - self._answered
            if silent < self._threshold + interval:  # a beat asked for just now cannot have been answered yet
                if stalled_since is not None:  # the beat queued during the stall ran as soon as it ended
                    log.warning("event loop answers again", blocked_seconds=round(self._answered - stalled_since, 2))
                    stalled_since = None
                continue
            if stalled_since is None:
                stalled_since = self._answered
                log.warning(
                    "event loop blocked: every call waits (blocking work inside async def? run it in a worker "
                    "thread: anyio.to_thread.run_sync)",
                    blocked_seconds=round(silent, 2),
                    calls_in_flight=self._in_flight(),
                    where=innermost_frames(sys._current_frames().get(self._loop_thread)),
                )
