"""Running an embedding alongside the lexical lookup, with the embedding already in its worker thread.

A search embeds its query in a worker thread while the lexical candidates are looked up on the event loop: one
forward pass keeps one core busy, the lookup the other. A task started with ``start_soon`` only runs when the
starting task yields, and the embedding needs a few scheduling rounds before its model call is running in a
thread: its own first step, the embedding chain, and anyio's thread-limiter checkpoint (measured: 3; one more is
given). A lookup that starts earlier holds the event loop, the thread starts only after it, and the two run one
after the other: 2-3 ms more per search at 100k issues. Too few rounds only lose the overlap, never correctness.
``tests/plugins/gim/test_overlap.py`` fails if the count stops being enough.

A submission does not use it: its two documents already take a core each, and a lookup beside them only shares
those cores (measured at 100k issues: no faster, in a comparison whose alternation gave each side different
synthetic templates; see bench/README.md, session 5).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["DISPATCH_ROUNDS", "Outcome", "alongside"]

T = TypeVar("T")

DISPATCH_ROUNDS = 4


class Outcome(Generic[T]):
    """What the work started by :func:`alongside` returned (read it after the ``async with`` block)."""

    def __init__(self) -> None:
        self._value: T | None = None
        self._done = False

    def set(self, value: T) -> None:
        self._value, self._done = value, True

    @property
    def value(self) -> T:
        if not self._done:
            raise RuntimeError("the work has not finished: read its outcome after the `async with` block")
        return self._value  # type: ignore[return-value]


@asynccontextmanager
async def alongside(work: Callable[[], Awaitable[T]]) -> AsyncIterator[Outcome[T]]:
    """Start ``work`` in a task, give it :data:`DISPATCH_ROUNDS` scheduling rounds to reach its worker thread,
    run the block, then wait for ``work``. Its error (a ``ToolError`` keeps its code) ends the block; the host
    unwraps the exception group."""
    outcome: Outcome[T] = Outcome()

    async def run() -> None:
        outcome.set(await work())

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        for _ in range(DISPATCH_ROUNDS):
            await anyio.lowlevel.checkpoint()
        yield outcome
