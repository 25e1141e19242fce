"""Running a request's CPU-bound work off the event loop when its input is long.

The event loop serves every request of the process: a pass over a 200 kB text (normalising, tokenising, scanning
for secrets, parsing code) that takes 50-100 ms would keep every other request waiting that long. From
:data:`OFF_LOOP_CHARS` characters on, :func:`off_loop` runs the work in a worker thread; below, a hop to a thread
(about 0.2 ms of CPU on the project's machines, see bench/README.md) costs more than the work, which stays inline.

A worker thread still needs the GIL: work that runs Python code gives it back to the loop every few milliseconds,
but a single long call into C keeps it until it returns. A regex over a whole 200 kB text takes a few
milliseconds when it is linear; ``ast.parse`` of a 160 kB module takes 40-90 ms of CPU in one call, so work like that
goes to a worker process from ``process_from`` characters on (``anyio.to_process``: a pool of interpreters kept for
the event loop's life; the first call starts one, about half a second).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

import anyio.to_process
import anyio.to_thread
import structlog
from anyio import BrokenWorkerProcess

from gateway.api.sanitizers import FieldKind, PlaceholderMap, SanitizedText, Sanitizer

__all__ = ["OFF_LOOP_CHARS", "PROCESS_CHARS", "off_loop", "parse_python", "parsing_python", "sanitize_off_loop"]

T = TypeVar("T")

log = structlog.get_logger(__name__)

OFF_LOOP_CHARS = 8_000
"""Inputs this long (in characters, in total) are worked on in a worker thread: at the half microsecond per
character a text pass typically costs, the largest inline call takes about 4 ms."""


PROCESS_CHARS = 32_000
"""Code this long is parsed in a worker process (``ast.parse`` holds the GIL about 15 ms for it)."""


async def off_loop(
    work: Callable[[], T], *, size: int, threshold: int = OFF_LOOP_CHARS, process_from: int | None = None
) -> T:
    """``work()``, in a worker thread when ``size`` (the characters it handles) reaches ``threshold``, and in a
    worker process when it reaches ``process_from`` (``work`` must then pickle: a module-level function, or a
    ``functools.partial`` of one, with picklable arguments and result). When no worker process can start, the work
    runs in a thread (logged as ``offload.process_unavailable``).

    ``work`` must not touch state the event loop changes meanwhile (it runs concurrently with other requests).
    """
    if size < threshold:
        return work()
    if process_from is not None and size >= process_from:
        try:
            return await anyio.to_process.run_sync(work)
        except BrokenWorkerProcess as exc:
            # e.g. the embedding program's main module cannot be imported again (no ``__main__`` guard)
            log.warning("offload.process_unavailable", error=str(exc), fallback="thread")
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


_PARSE_LOCK = threading.RLock()


@contextmanager
def parsing_python() -> Iterator[None]:
    """Hold this while running code that calls ``ast.parse`` itself (pyflakes parses string annotations): no other
    thread parses Python meanwhile (see :func:`parse_python`). Re-entrant."""
    with _PARSE_LOCK:
        yield


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(source, filename=filename)``, one call at a time in the process, so that it is safe in the worker
    threads :func:`off_loop` uses.

    CPython 3.11 counts the depth of the syntax tree it is building in state shared by every thread
    (python/cpython#106905): when a garbage collection inside one thread's ``ast.parse`` runs a finalizer and the
    interpreter switches to another thread that parses too, one of the two fails with ``SystemError: AST
    constructor recursion depth mismatch``. This lock orders the parses that go through it (and through
    :func:`parsing_python`, for a library that parses on its own); a parse elsewhere (Python 3.11's ``traceback``
    parses a source line to underline an error) is not ordered by it. Worker processes have their own state.
    """
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)
