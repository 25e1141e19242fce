"""``gateway.api.off_loop``: small work inline, long work in a worker thread, code for ``ast`` in a worker process;
``parse_python`` one at a time."""

from __future__ import annotations

import gc
import os
import sys
import threading
from types import FrameType

import anyio
import pytest

from gateway.api import OFF_LOOP_CHARS, PROCESS_CHARS, off_loop, parse_python
from tests.holding import PATIENCE

pytestmark = pytest.mark.anyio


async def test_work_runs_where_its_size_says() -> None:
    here, loop_thread = os.getpid(), threading.get_ident()
    assert await off_loop(threading.get_ident, size=OFF_LOOP_CHARS - 1) == loop_thread
    assert await off_loop(threading.get_ident, size=OFF_LOOP_CHARS) != loop_thread
    assert await off_loop(os.getpid, size=PROCESS_CHARS, process_from=PROCESS_CHARS) != here
    assert await off_loop(os.getpid, size=PROCESS_CHARS - 1, process_from=PROCESS_CHARS) == here
    assert await off_loop(threading.get_ident, size=0, threshold=0) != loop_thread


async def test_an_error_reaches_the_caller() -> None:
    with pytest.raises(ValueError, match="invalid literal"):
        await off_loop(lambda: int("x"), size=OFF_LOOP_CHARS)
    with pytest.raises(ValueError, match="invalid literal"):
        await off_loop(_parse_x, size=PROCESS_CHARS, process_from=PROCESS_CHARS)


def _parse_x() -> int:
    return int("x")


async def test_the_loop_serves_others_while_work_runs_in_a_thread() -> None:
    released = threading.Event()

    def held() -> None:
        assert released.wait(PATIENCE), "nothing released the work: it blocked the event loop"

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: off_loop(held, size=OFF_LOOP_CHARS))
        await anyio.sleep(0.01)  # runs only if the loop is free while the work waits in its thread
        released.set()


async def test_work_falls_back_to_a_thread_when_no_worker_process_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*args: object, **kwargs: object) -> object:
        raise anyio.BrokenWorkerProcess("Error during worker process initialization")

    monkeypatch.setattr(anyio.to_process, "run_sync", broken)
    ran_in = await off_loop(threading.get_ident, size=PROCESS_CHARS, process_from=PROCESS_CHARS)
    assert ran_in != threading.get_ident(), "in a worker thread, not on the loop"


def test_parse_python_waits_for_a_parse_underway_in_another_thread() -> None:
    """CPython 3.11 keeps the depth of the tree ``ast.parse`` builds in state every thread shares: a second thread
    parsing while a garbage collection inside the first one's parse runs Python code breaks it (``SystemError: AST
    constructor recursion depth mismatch``). A collection callback stands in for that finalizer: it starts a second
    parse from inside the first and sees it wait for the first to end."""
    source = "\n".join(f"def f{i}(a):\n    return [a * x for x in range({i})]\n" for i in range(200))
    parser = threading.current_thread()
    seen: dict[str, bool] = {}
    other = threading.Thread(target=parse_python, args=("x = 1",))

    collections = 0

    def inside_the_parse(phase: str, info: dict[str, int]) -> None:
        nonlocal collections
        if threading.current_thread() is not parser or "started" in seen or not _within(parse_python, sys._getframe()):
            return
        collections += 1
        if collections < 100:  # well into building the tree: the lock is held by then
            return
        seen["started"] = True
        other.start()
        other.join(timeout=0.5)
        seen["other_waited"] = other.is_alive()

    threshold = gc.get_threshold()
    gc.collect()
    gc.callbacks.append(inside_the_parse)
    gc.set_threshold(1)
    try:
        tree = parse_python(source)
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(inside_the_parse)
    other.join(timeout=PATIENCE)
    assert seen == {"started": True, "other_waited": True}
    assert not other.is_alive()
    assert len(tree.body) == 200


def _within(function: object, frame: FrameType | None) -> bool:
    code = getattr(function, "__code__", None)
    while frame is not None:
        if frame.f_code is code:
            return True
        frame = frame.f_back
    return False
