"""Holding a pass of a request in whatever thread runs it, until the test releases it.

The responsiveness tests hold a maximal request inside its CPU-bound pass and answer a small request meanwhile:
the order shows the pass runs off the event loop. Had it run on the loop, the loop would be blocked, the small
request could not be answered, and the held pass would give up after :data:`PATIENCE` seconds (a hang guard, far
beyond what the small request takes; nothing is timed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio

__all__ = ["PATIENCE", "Hold", "in_event_loop"]

PATIENCE = 60.0


def in_event_loop() -> bool:
    """Whether the caller runs in an event loop's thread (not in a worker thread)."""
    try:
        anyio.get_current_task()
    except RuntimeError:
        return False
    return True


class Hold:
    """Wraps a pass so that, on a large input, it notes its thread, signals ``reached`` and waits for ``released``."""

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.released = threading.Event()
        self.on_loop: list[bool] = []

    def around(self, original: Callable[..., Any], size: Callable[..., int], *, at_least: int) -> Callable[..., Any]:
        def held(*args: Any, **kwargs: Any) -> Any:
            if size(*args, **kwargs) >= at_least:
                self.on_loop.append(in_event_loop())
                self.reached.set()
                assert self.released.wait(PATIENCE), "nothing released the held pass: the event loop was blocked"
            return original(*args, **kwargs)

        return held
