"""GIM in one process: does the embedding overlap the lexical lookup, and what a submission costs without stdio.

Loads a seeded deployment (the same as ``bench/gim_perf.py``: ``--seeded DIR`` reuses one it kept) and drives the
runtime directly, without a transport, so the client's share drops out:

1. **Overlap A/B.** Search+submit pairs, switching every two pairs between 0 scheduling rounds before the lexical
   lookup (the embedding starts only after it) and :data:`gateway_plugins.gim.overlap.DISPATCH_ROUNDS` (the
   default: the embedding is running in its thread first). Alternating keeps the machine's drift out of the
   comparison. Only searches overlap (since session 4 a submission looks up its candidates under the lock), so
   the submissions' two rows are a control: they differ only by the machine's noise.
2. **Throughput.** Batches of 40 submissions, one at a time and 4 in flight.

    /work/venv/bin/python bench/gim_overlap.py [--size 100000] [--real 2000] [--pairs 400] [--seeded DIR]
"""

from __future__ import annotations

import argparse
import functools
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench import gim_perf
from tests.plugins.gim.support import served_deployment, write_config


def _percentiles(values: list[float]) -> str:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered):.2f} / {statistics.mean(ordered):.2f} / {p95:.2f}"


async def measure(config: Path, pairs: int) -> None:
    from gateway.app import running_runtime
    from gateway_plugins.gim import overlap

    rounds = overlap.DISPATCH_ROUNDS
    async with running_runtime(config, configure_logs=False) as runtime:

        async def call(tool: str, arguments: dict[str, Any]) -> float:
            started = time.perf_counter()
            await runtime.call_tool(tool, arguments, runtime.new_context(tool_name=tool))
            return (time.perf_counter() - started) * 1000

        rng = random.Random(7)
        issue = iter(range(90_000_000, 100_000_000))
        for i in range(10):  # warm-up: model load, caches
            await call("gim_search_issues", gim_perf.query_for(i, variant=9))
            await call("gim_submit_issue", gim_perf.issue(next(issue)))
        latencies: dict[tuple[str, int], list[float]] = {}
        for n in range(pairs):
            overlap.DISPATCH_ROUNDS = rounds if (n // 2) % 2 else 0
            search = await call("gim_search_issues", gim_perf.query_for(rng.randrange(2000), variant=1))
            submit = await call("gim_submit_issue", gim_perf.issue(next(issue)))
            latencies.setdefault(("search", overlap.DISPATCH_ROUNDS), []).append(search)
            latencies.setdefault(("submit", overlap.DISPATCH_ROUNDS), []).append(submit)
        overlap.DISPATCH_ROUNDS = rounds
        print("\ncall    rounds before the lookup  ms p50 / mean / p95")
        for (tool, used), values in sorted(latencies.items()):
            print(f"{tool:7} {used:<25} {_percentiles(values)}")

        async def batch(in_flight: int, size: int = 40) -> float:
            limiter = anyio.Semaphore(in_flight)

            async def one() -> None:
                async with limiter:
                    await call("gim_submit_issue", gim_perf.issue(next(issue)))

            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for _ in range(size):
                    group.start_soon(one)
            return size / (time.perf_counter() - started)

        print("\nsubmissions/s in process (median of 4 batches of 40)")
        for in_flight in (1, 4):
            rates = [await batch(in_flight) for _ in range(4)]
            print(f"{in_flight} in flight: {statistics.median(rates):.1f} ({', '.join(f'{r:.0f}' for r in rates)})")


async def run(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="gim-overlap-") as tmp:
        data_dir = Path(tmp) / "data"
        config = write_config(
            Path(tmp) / "config.toml", served_deployment(data_dir, name="gim-overlap", search_limit=10**9)
        )
        os.environ["MCP_GATEWAY_DATA_DIR"] = str(data_dir)
        log = functools.partial(print, file=sys.stderr)
        await gim_perf.seeded_deployment(config, data_dir, args.size, args.real, args.seeded, log)
        await measure(config, args.pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=2000)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--seeded", default=None, help="a directory gim_perf.py --seeded kept seedings in")
    from gateway.logs import configure_logging

    configure_logging("warning")
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
