"""What reaching the ``qdrant-edge`` store through its owner (another process, over the local socket) costs against
calling it in-process.

    python bench/vector_sharing.py [--points 10000] [--calls 300] [--rounds 3] [--dir PATH]

One collection of ``--points`` 384-dimensional clustered unit vectors with GIM's payload (``item_id``,
``master_id``, ``kind``, keyword-indexed), indexed once. Every round measures three ways of calling it from this
process, one after the other:

* ``direct``: a ``QdrantEdgeStore`` opened here (what the owner's own calls cost);
* ``owner``: the provider's ``SharedEdgeStore`` owning the store here (its socket served, nobody connected);
* ``client``: a ``SharedEdgeStore`` whose owner is another process (this script with ``--serve``, otherwise idle).

Operations, ``--calls`` of one after the other: a query (top 10, ``kind = error`` filter, as GIM's search), an
upsert of two points (one GIM item's vectors; existing ids, so the size stays put) and a filtered count. Per way and
operation: wall-clock p50 and p95 over every round, and CPU time per call of this process plus, for ``client``, the
owner's (from /proc), i.e. what a proxied call costs the machine.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import structlog

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gateway.api import VectorPoint  # noqa: E402
from gateway_plugins.vector_stores.edge import QdrantEdgeStore  # noqa: E402
from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore  # noqa: E402

DIM = 384
COLLECTION = "gim__bench-384"
FIELDS = {"kind": "keyword", "master_id": "keyword", "item_id": "keyword"}
WAYS = ("direct", "owner", "client")
OPS = ("query", "upsert 2", "count")
TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def dataset(count: int, seed: int = 7) -> tuple[np.ndarray, list[str]]:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((256, DIM), dtype=np.float32)
    vectors = centers[rng.integers(256, size=count)] + rng.standard_normal((count, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    ids = [f"{i:08x}-0000-4000-8000-{seed:012x}" for i in range(count)]
    return vectors, ids


def payload(i: int) -> dict[str, str]:
    return {"item_id": f"item-{i // 2}", "master_id": f"master-{i // 20}", "kind": "error" if i % 2 else "resolution"}


async def load(directory: Path, vectors: np.ndarray, ids: list[str]) -> None:
    store = QdrantEdgeStore(directory)
    try:
        await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields=FIELDS)
        for start in range(0, len(ids), 512):
            batch = [VectorPoint(ids[i], vectors[i], payload(i)) for i in range(start, min(start + 512, len(ids)))]
            await store.upsert(COLLECTION, batch)
        await store.optimize(COLLECTION)
    finally:
        await store.close()


async def measure(
    store: Any, vectors: np.ndarray, ids: list[str], calls: int, owner_pid: int | None, seed: int
) -> dict[str, tuple[list[float], float]]:
    """Per operation: the wall seconds of each call, and the CPU seconds per call (this process, plus the owner's)."""
    rng = np.random.default_rng(seed)

    def query() -> Awaitable[Any]:
        return store.query(COLLECTION, vectors[rng.integers(len(ids))], limit=10, filter={"kind": "error"})

    def upsert() -> Awaitable[Any]:
        chosen = rng.integers(len(ids), size=2)
        return store.upsert(COLLECTION, [VectorPoint(ids[i], vectors[(i + 1) % len(ids)], payload(i)) for i in chosen])

    def count() -> Awaitable[Any]:
        return store.count(COLLECTION, filter={"kind": "error"})

    def cpu() -> float:
        return time.process_time() + (process_cpu(owner_pid) if owner_pid else 0.0)

    ops: dict[str, Callable[[], Awaitable[Any]]] = {"query": query, "upsert 2": upsert, "count": count}
    found: dict[str, tuple[list[float], float]] = {}
    for name, op in ops.items():
        await op()  # warm: the collection opened, the connection made
        walls = []
        cpu_before = cpu()
        for _ in range(calls):
            started = time.perf_counter()
            await op()
            walls.append(time.perf_counter() - started)
        found[name] = (walls, (cpu() - cpu_before) / calls)
    return found


def start_owner(directory: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


Results = dict[str, dict[str, list[tuple[list[float], float]]]]
"""way -> operation -> one (call wall times, CPU per call) per round."""


async def bench(points: int, calls: int, rounds: int, root: Path) -> Results:
    directory = root / "store"
    vectors, ids = dataset(points)
    await load(directory, vectors, ids)
    results: dict[str, dict[str, list[tuple[list[float], float]]]] = {w: {op: [] for op in OPS} for w in WAYS}
    for round_number in range(rounds):
        for way in WAYS:
            owner = start_owner(directory) if way == "client" else None
            store: Any = QdrantEdgeStore(directory) if way == "direct" else SharedEdgeStore(directory)
            try:
                assert way != "client" or not store.is_owner
                found = await measure(store, vectors, ids, calls, owner.pid if owner else None, round_number)
            finally:
                await store.close()
                if owner is not None:
                    owner.communicate(input="", timeout=60)
            for op, measured in found.items():
                results[way][op].append(measured)
    return results


def report(results: Results, points: int, calls: int, rounds: int) -> None:
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end of the run")
    print(f"{points} vectors of {DIM} dims, indexed; {calls} calls per operation per way per round, {rounds} rounds\n")
    header = ("operation", "way", "p50 ms", "p95 ms", "CPU ms/call", "p50 added vs direct")
    rows = []
    for op in OPS:
        direct_p50 = float(np.percentile([w for walls, _ in results["direct"][op] for w in walls], 50)) * 1000
        for way in WAYS:
            walls = np.array([w for ws, _ in results[way][op] for w in ws]) * 1000
            cpu = float(np.median([c for _, c in results[way][op]])) * 1000
            p50 = float(np.percentile(walls, 50))
            added = "" if way == "direct" else f"{p50 - direct_p50:+.3f}"
            rows.append((op, way, f"{p50:.3f}", f"{np.percentile(walls, 95):.3f}", f"{cpu:.3f}", added))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        cells = (c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        print("| " + " | ".join(cells) + " |")
    print("\nCPU ms/call: the median over rounds of (CPU time of a round's calls / calls); for `client` both")
    print("processes (the caller, and the owner as /proc counts it, in 10 ms ticks).")


async def serve(directory: Path) -> None:
    store = SharedEdgeStore(directory)
    try:
        assert store.is_owner
        print("ready", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.read)
    finally:
        await store.close()


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10_000, help="vectors in the collection")
    parser.add_argument("--calls", type=int, default=300, help="calls per operation, way and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three ways")
    parser.add_argument("--dir", type=Path, help="where the store goes (default: a temporary directory)")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the owner process of the `client` way
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # warnings and above
    if args.serve:
        anyio.run(serve, args.serve)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as root:
        results = anyio.run(bench, args.points, args.calls, args.rounds, Path(root))
    report(results, args.points, args.calls, args.rounds)


if __name__ == "__main__":
    cli()
