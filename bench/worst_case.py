"""Worst-case inputs through every tool: how long the call takes, and how long it keeps the server from others.

One gateway serves GIM and Sequential Thinking (auditing code with the ``internal`` judge) over real HTTP, in this
process's event loop. For each tool and each worst-case text (``tests/adversarial.py``: long runs of one
character class, repeated structures, many lines) at the schema's maximum sizes, a client thread sends the call
through the REST facade while:

* a probe task in the server's event loop sleeps 1 ms at a time and records how late it wakes (``loop held``: the
  longest the loop was held, by this call or anything else, including a worker thread holding the GIL and the
  machine giving the process no CPU) and how much CPU the loop's thread spent between two wake-ups (``loop CPU``:
  code running on the loop itself);
* a second client thread keeps asking ``GET /health`` and a small ``gim_search_issues`` (latency of the slowest).

The first row (``idle``) measures the same probes with no worst-case call: the floor of the machine's noise.

    python bench/worst_case.py [--tools gim_search_issues,sequentialthinking] [--inputs letters,digits]
                               [--gim-chars 200000] [--thought-chars 100000] [--repeat 1] [--slow-callbacks] [--blame]

Sizes: every GIM free-text field at its ``max_length`` (200,000 characters); a submission fills ten of them (2 MB
of JSON). A thought at ``max_thought_chars`` (100,000), prose or fenced code so that an audit runs.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.worst_case_cases import (
    PACKS,
    Case,
    cases,
    context_cases,
    deployment,
    make_workspace,
    remote_cases,
    thought_arguments,
)
from gateway import http
from gateway.app import running_runtime
from tests.plugins.gim.support import NUMPY_ACTIONS, NUMPY_CAUSE, NUMPY_ERROR, submission

GIM_CHARS = 200_000
THOUGHT_CHARS = 100_000
PROBE_PAUSE = 0.02
SMALL_SEARCH = {"error_message": NUMPY_ERROR, "limit": 3}


# -- measuring ------------------------------------------------------------------------------------------------------


@dataclass
class LoopLag:
    """How late the probe task wakes from a 1 ms sleep (the longest the event loop was held)."""

    worst: float = 0.0
    """Wall-clock: includes the loop thread waiting for the GIL, and the machine giving the process no CPU."""
    busiest: float = 0.0
    """CPU time the loop thread itself spent between two of the probe's turns (code running on the loop)."""
    beat: float = field(default_factory=time.perf_counter)
    thread_id: int = 0

    def reset(self) -> None:
        self.worst = self.busiest = 0.0

    async def run(self) -> None:
        self.thread_id = threading.get_ident()
        while True:
            started, cpu = time.perf_counter(), time.thread_time()
            await anyio.sleep(0.001)
            self.beat = time.perf_counter()
            self.worst = max(self.worst, self.beat - started - 0.001)
            self.busiest = max(self.busiest, time.thread_time() - cpu)


class Blame:
    """With ``--blame``: a watchdog thread that samples what the event loop's thread runs while it is held."""

    def __init__(self, lag: LoopLag, *, after: float = 0.01) -> None:
        self.lag, self.after = lag, after
        self.stacks: Counter[str] = Counter()
        self.steps: defaultdict[str, list[float]] = defaultdict(list)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Blame:
        self._thread.start()
        self._original_run = asyncio.events.Handle._run
        blame = self

        def timed_run(handle: asyncio.events.Handle) -> None:
            cpu, before = time.thread_time(), _coroutine_position(handle)
            blame._original_run(handle)
            spent = time.thread_time() - cpu
            if spent > 0.005:
                blame.steps[f"{before} -> {_coroutine_position(handle)}"].append(spent)

        asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.events.Handle._run = self._original_run  # type: ignore[method-assign]
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        root = str(Path(__file__).resolve().parent.parent)
        while not self._stop.wait(0.005):
            if time.perf_counter() - self.lag.beat < self.after:
                continue
            for ident, frame in sys._current_frames().items():
                if ident == threading.get_ident():
                    continue
                ours = [
                    f
                    for f in traceback.extract_stack(frame)
                    if f.filename.startswith(root) and "/bench/" not in f.filename and "/threading.py" not in f.filename
                ]
                if ours:
                    where = "loop" if ident == self.lag.thread_id else "thread"
                    path = " < ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(ours[-4:]))
                    self.stacks[f"[{where}] {path}"] += 1

    def report(self) -> None:
        print("\nloop steps that took over 5 ms of the loop thread's CPU (where the task was -> where it stopped):")
        for step, spent in sorted(self.steps.items(), key=lambda item: -max(item[1]))[:20]:
            print(f"  max {max(spent) * 1000:6.1f} ms  x{len(spent):<4d} {step}")
        print("\nwhere each thread was while the event loop was held over 10 ms (5 ms samples):")
        for stack, samples in self.stacks.most_common(15):
            print(f"  {samples:5d}  {stack}")


@dataclass
class Probes:
    """A client thread asking for ``/health`` and a small search, one after the other, until stopped."""

    base: str
    health: list[float] = field(default_factory=list)
    search: list[float] = field(default_factory=list)
    failures: int = 0

    def run(self, stop: threading.Event) -> None:
        with httpx.Client(base_url=self.base, timeout=600) as client:
            while not stop.is_set():
                for path, sink, payload in (
                    ("/health", self.health, None),
                    ("/api/v1/tools/gim_search_issues", self.search, SMALL_SEARCH),
                ):
                    started = time.perf_counter()
                    response = client.get(path) if payload is None else client.post(path, json=payload)
                    sink.append(time.perf_counter() - started)
                    self.failures += response.status_code != 200
                stop.wait(PROBE_PAUSE)


@dataclass
class Row:
    tool: str
    input: str
    chars: int
    outcome: str
    seconds: float
    loop_block_ms: float
    loop_cpu_ms: float
    health_ms: float
    search_ms: float
    probes: int


def measure(base: str, lag: LoopLag, case: Case | None) -> Row:
    """Run ``case`` (``None``: nothing, the idle floor) from a client thread while the probes run."""
    stop = threading.Event()
    probes = Probes(base)
    prober = threading.Thread(target=probes.run, args=(stop,), daemon=True)
    time.sleep(0.2)
    lag.reset()
    prober.start()
    started = time.perf_counter()
    outcome = "-"
    if case is None:
        time.sleep(2.0)
    else:
        with httpx.Client(base_url=base, timeout=1800) as client:
            if case.method == "GET":
                response = client.get(case.path, params=case.arguments)
            else:
                response = client.request(case.method, case.path, json=case.arguments)
        outcome = _outcome(response)
    seconds = time.perf_counter() - started
    time.sleep(0.1)
    stop.set()
    prober.join()
    return Row(
        tool=case.tool if case else "(none)",
        input=case.input if case else "idle",
        chars=case.chars if case else 0,
        outcome=outcome,
        seconds=seconds,
        loop_block_ms=lag.worst * 1000,
        loop_cpu_ms=lag.busiest * 1000,
        health_ms=max(probes.health, default=0.0) * 1000,
        search_ms=max(probes.search, default=0.0) * 1000,
        probes=len(probes.health) + len(probes.search),
    )


def _coroutine_position(handle: asyncio.events.Handle) -> str:
    """The awaits a loop step's task is suspended in (the gateway's and plugins' frames, outermost first)."""
    task = getattr(handle._callback, "__self__", None)
    coro = task.get_coro() if isinstance(task, asyncio.Task) else None
    frames = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is not None and ("/gateway/" in frame.f_code.co_filename or "/plugins/" in frame.f_code.co_filename):
            frames.append(f"{Path(frame.f_code.co_filename).name}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    if frames:
        return " > ".join(frames[-3:])
    return getattr(handle._callback, "__qualname__", type(handle._callback).__name__)[:40]


@contextmanager
def slow_callback_log(enabled: bool) -> Iterator[None]:
    """With ``--slow-callbacks``: asyncio's debug mode names each callback that held the loop over 50 ms."""
    if not enabled:
        yield
        return
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = 0.05
    logging.getLogger("asyncio").setLevel(logging.WARNING)
    logging.basicConfig(stream=sys.stderr, format="%(message)s")
    try:
        yield
    finally:
        loop.set_debug(False)


def print_table(rows: list[Row]) -> None:
    print(
        "| tool | input | chars | outcome | call s | loop held ms | loop CPU ms | /health ms | small search ms "
        "| probes |"
    )
    print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r.tool} | {r.input} | {r.chars:,} | {r.outcome} | {r.seconds:.2f} | {r.loop_block_ms:.1f} "
            f"| {r.loop_cpu_ms:.1f} | {r.health_ms:.1f} | {r.search_ms:.1f} | {r.probes} |"
        )
    measured = [r for r in rows if r.input != "idle"]
    for label, key in (("loop held", "loop_block_ms"), ("loop CPU", "loop_cpu_ms")):
        if not measured:
            break
        values = [getattr(r, key) for r in measured]
        top = max(measured, key=lambda r: getattr(r, key))
        print(
            f"{label} over {len(measured)} calls: median {statistics.median(values):.1f} ms, "
            f"max {max(values):.1f} ms ({top.tool}, {top.input})"
        )


# -- main -----------------------------------------------------------------------------------------------------------


def _selected(value: str | None) -> Callable[[str], bool]:
    names = {item.strip() for item in value.split(",")} if value else None
    return lambda name: names is None or name in names or name.split(" ")[0] in names


async def main(args: argparse.Namespace) -> list[Row]:
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="worst-case-") as scratch:
        workspace = make_workspace(Path(scratch) / "repo")
        packs = tuple(dict.fromkeys(["gim", *args.packs.split(",")]))  # the probes search GIM
        config = deployment(Path(scratch), workspace, packs)
        async with running_runtime(config) as runtime:
            ready = anyio.Event()
            state: dict[str, Any] = {}

            def on_ready(port: int, stop: Callable[[], None]) -> None:
                state.update(port=port, stop=stop)
                ready.set()

            lag = LoopLag()
            async with anyio.create_task_group() as group:
                group.start_soon(lambda: http.serve_http(runtime, host="127.0.0.1", port=0, on_ready=on_ready))
                await ready.wait()
                probing = anyio.CancelScope()

                async def probe_loop() -> None:
                    with probing:
                        await lag.run()

                group.start_soon(probe_loop)
                base = f"http://127.0.0.1:{state['port']}"
                issue_id = await anyio.to_thread.run_sync(_seed, base, packs)
                tool_ok, input_ok = _selected(args.tools), _selected(args.inputs)
                selected = [c for c in _all_cases(args, issue_id, packs) if tool_ok(c.tool) and input_ok(c.input)]
                blame = Blame(lag) if args.blame else nullcontext()
                with slow_callback_log(args.slow_callbacks), blame:
                    for _ in range(args.repeat):
                        rows.append(await anyio.to_thread.run_sync(measure, base, lag, None))
                        for case in selected:
                            row = await anyio.to_thread.run_sync(measure, base, lag, case)
                            rows.append(row)
                            print(
                                f"  {row.tool} / {row.input}: {row.seconds:.2f} s, loop {row.loop_block_ms:.1f} ms",
                                file=sys.stderr,
                                flush=True,
                            )
                if isinstance(blame, Blame):
                    blame.report()
                probing.cancel()
                state["stop"]()  # the server finishes its requests and returns
    return rows


def _all_cases(args: argparse.Namespace, issue_id: str, packs: tuple[str, ...]) -> Iterator[Case]:
    for case in cases(args.gim_chars, args.thought_chars, issue_id):
        if case.tool.startswith("gim_") or "thinking" in packs:
            yield case
    if "context" in packs:
        yield from context_cases()
    if "remote" in packs:
        yield from remote_cases()


def _outcome(response: httpx.Response) -> str:
    if response.is_success:
        return "ok"
    try:
        error = response.json().get("error")
    except ValueError:
        return str(response.status_code)
    code = (error.get("details") or {}).get("code") or error.get("code") if isinstance(error, dict) else None
    return f"{response.status_code} {code}"


def _seed(base: str, packs: tuple[str, ...]) -> str:
    """A few issues, so searches have something to rank, and the Context Engine's sample repository indexed;
    returns one master's id."""
    with httpx.Client(base_url=base, timeout=120) as client:
        first = client.post(
            "/api/v1/tools/gim_submit_issue", json=submission(NUMPY_ERROR, NUMPY_CAUSE, actions=NUMPY_ACTIONS)
        )
        first.raise_for_status()
        for number in range(4):
            error = f"KeyError: 'column_{number}'\n  in pandas frame lookup of table t{number}"
            client.post("/api/v1/tools/gim_submit_issue", json=submission(error, f"the column {number} was renamed"))
        for _ in range(3):  # warm the probes' path
            client.post("/api/v1/tools/gim_search_issues", json=SMALL_SEARCH)
        # start the worker process that parses long code (once per server: about half a second)
        code = "".join(f"def f{n}(a):\n    return a + {n}\n\n\n" for n in range(1500))
        if "thinking" in packs:
            client.post("/api/v1/tools/sequentialthinking", json=thought_arguments(f"```python\n{code}```"))
        if "context" in packs:
            _indexed(client)
        return str(first.json()["master_issue_id"])


def _indexed(client: httpx.Client, timeout: float = 300.0) -> None:
    """Index the declared connector, and wait for the job to finish."""
    client.post("/api/v1/index/start", json={}).raise_for_status()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get("/api/v1/index/status").json()
        if status.get("last_completed") and status.get("status") not in ("running", "stopping"):
            return
        time.sleep(0.5)
    raise TimeoutError(f"the context index did not complete: {status}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", help="comma-separated tool names (default: all)")
    parser.add_argument("--inputs", help="comma-separated input names (default: all)")
    parser.add_argument("--packs", default=",".join(PACKS), help="packs served besides gim (default: all)")
    parser.add_argument("--gim-chars", type=int, default=GIM_CHARS)
    parser.add_argument("--thought-chars", type=int, default=THOUGHT_CHARS)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--slow-callbacks", action="store_true", help="log callbacks that held the loop over 50 ms")
    parser.add_argument("--blame", action="store_true", help="sample the loop thread's stack while it is held")
    print_table(anyio.run(main, parser.parse_args()))
