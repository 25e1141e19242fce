"""Letting a just-started embedding reach its worker thread before the event loop turns to the lexical lookup.

A search embeds its query, and a submission its documents, in a worker thread while the lexical candidates are
looked up on the event loop. A task started with ``start_soon`` only runs when the starting task yields, and the
embedding needs a few scheduling rounds before its model call is running in a thread. Those rounds are its own
first step, the embedding chain's task group for documents, and anyio's thread-limiter checkpoint: measured,
3 for a query and 4 for documents. A lookup that starts earlier holds the event loop, the thread starts only after
it, and the two run one after the other: 2-3 ms more per call at 100k issues. Too few rounds only lose the
overlap, never correctness. ``tests/plugins/gim/test_overlap.py`` fails if the count stops being enough.
"""

from __future__ import annotations

import anyio.lowlevel

__all__ = ["DISPATCH_ROUNDS", "let_embedding_start"]

DISPATCH_ROUNDS = 4


async def let_embedding_start() -> None:
    """Yield to the event loop :data:`DISPATCH_ROUNDS` times (about 10 µs when nothing else is ready)."""
    for _ in range(DISPATCH_ROUNDS):
        await anyio.lowlevel.checkpoint()
