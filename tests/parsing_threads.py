"""Catching a second thread's Python parse in the middle of a first one, as CPython 3.11 can switch threads there.

CPython 3.11 keeps the depth of the tree ``ast.parse`` builds in state every thread shares: a second thread parsing
while a garbage collection inside the first one's parse runs Python code (a finalizer) breaks one of the two
(``SystemError: AST constructor recursion depth mismatch``). A collection callback stands in for that finalizer.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType

from tests.holding import PATIENCE


def waits_for_the_first(first: Callable[[], object], inside: CodeType, second: Callable[[], object]) -> bool:
    """Run ``first()`` here; once it is well inside ``inside`` (a function's code it calls), start ``second()`` in
    another thread. Whether that thread waited for ``first()`` to end (it was still running half a second on)."""
    here = threading.current_thread()
    seen: dict[str, bool] = {}
    other = threading.Thread(target=second)
    collections = 0

    def midway(phase: str, info: dict[str, int]) -> None:
        nonlocal collections
        if threading.current_thread() is not here or "waited" in seen or not _within(inside, sys._getframe()):
            return
        collections += 1
        if collections < 20:  # into the work, past any set-up before its parse starts
            return
        other.start()
        other.join(timeout=0.5)
        seen["waited"] = other.is_alive()

    threshold = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(midway)
    gc.set_threshold(1)  # a collection at (nearly) every allocation, so inside the parse too
    try:
        first()
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(midway)
    other.join(timeout=PATIENCE)
    assert "waited" in seen, "the second thread was never started: no collection ran inside the first's work"
    assert not other.is_alive()
    return seen["waited"]


def _within(code: CodeType, frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False
