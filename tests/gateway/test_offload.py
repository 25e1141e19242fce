"""``gateway.api.off_loop``: small work inline, long work in a worker thread, code for ``ast`` in a worker process;
``parse_python`` one at a time."""

from __future__ import annotations

import ast
import os
import threading

import anyio
import pytest

from gateway.api import OFF_LOOP_CHARS, PROCESS_CHARS, off_loop, parse_python, parsing_python
from tests.holding import PATIENCE
from tests.parsing_threads import waits_for_the_first

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
    source = "\n".join(f"def f{i}(a):\n    return [a * x for x in range({i})]\n" for i in range(200))
    trees: list[ast.Module] = []
    assert waits_for_the_first(lambda: trees.append(parse_python(source)), parse_python.__code__, _parse_small)
    assert len(trees[0].body) == 200


def test_work_run_while_parsing_python_holds_other_parses_back() -> None:
    def hold() -> None:
        with parsing_python():
            ast.parse("\n".join(f"x{i}: 'dict[str, list[int]]' = {{}}" for i in range(200)))

    assert waits_for_the_first(hold, hold.__code__, _parse_small)


def _parse_small() -> None:
    parse_python("x = 1")
