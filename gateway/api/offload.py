"""Running a request's CPU-bound work off the event loop when its input is long.

The event loop serves every request of the process: a pass over a 200 kB text (normalising, tokenising, scanning
for secrets, parsing code) that takes 50-100 ms would keep every other request waiting that long. From
:data:`OFF_LOOP_CHARS` characters on, :func:`off_loop` runs the work in a worker thread; below, a hop to a thread
(about 0.2 ms of CPU on the project's machines, see bench/README.md) costs more than the work, which stays inline.

A worker thread still needs the GIL: work that runs Python code gives it back to the loop every few milliseconds,
but a single long call into C (one regex over a whole 200 kB text) keeps it until it returns. Passes over long
texts should therefore go line by line, or at least be linear, so no single call lasts long.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TypeVar

import anyio.to_thread

from gateway.api.sanitizers import FieldKind, PlaceholderMap, SanitizedText, Sanitizer

__all__ = ["OFF_LOOP_CHARS", "off_loop", "sanitize_off_loop"]

T = TypeVar("T")

OFF_LOOP_CHARS = 8_000
"""Inputs this long (in characters, in total) are worked on in a worker thread: at the half microsecond per
character a text pass typically costs, the largest inline call takes about 4 ms."""


async def off_loop(work: Callable[[], T], *, size: int, threshold: int = OFF_LOOP_CHARS) -> T:
    """``work()``, in a worker thread when ``size`` (the characters it handles) reaches ``threshold``.

    ``work`` must not touch state the event loop changes meanwhile (it runs concurrently with other requests).
    """
    if size < threshold:
        return work()
    return await anyio.to_thread.run_sync(work)


async def sanitize_off_loop(
    layer: Sanitizer, text: str, *, kind: FieldKind, placeholders: PlaceholderMap
) -> SanitizedText:
    """``layer.sanitize(text, ...)``; for a long ``text``, a layer that offers a synchronous
    ``sanitize_sync(text, *, placeholders)`` (an offline layer, whose work is CPU-bound) runs that in a worker
    thread instead. A layer without it (one that waits on the network) is awaited on the loop."""
    run_sync = getattr(layer, "sanitize_sync", None)
    if run_sync is None or len(text) < OFF_LOOP_CHARS:
        return await layer.sanitize(text, kind=kind, placeholders=placeholders)
    result: SanitizedText = await off_loop(partial(run_sync, text, placeholders=placeholders), size=len(text))
    return result
