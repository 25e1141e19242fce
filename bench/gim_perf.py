"""GIM load benchmark: search latency over stdio and submission throughput with 10k and 100k stored issues.

For each size N:

1. **Seed** (in-process, the pack's own service layer): N synthetic, distinct issues (deterministic generator
   in bench/gim_perf_issues.py: eight error shapes over five languages, each issue a distinct
   package/symbol/version) are imported with :func:`gateway_plugins.gim.bulk.import_masters` (batched rows and
   vectors, same pending -> vectors -> active protocol). Their vectors come from the real local MiniLM embedder
   for the first ``--real`` issues; above that, embedding every text on this machine would take longer than the
   benchmark is worth, so the remaining vectors are synthetic: normalised mixtures of two real item vectors plus
   noise (same dimension, a realistic density for the HNSW index). Queries are only drawn from really embedded
   issues.
2. **Serve** ``python -m gateway serve --config ...`` over stdio (the default deployment: local embedder, Qdrant
   Edge, SQLite, patterns + contextual sanitizers, the rate_limit interceptor with a large quota) and drive it
   with ``mcp.Client``: start-up time, then ``--searches`` searches (another report of a seeded issue: other
   user, paths, line numbers) timed at the client (p50/p95/p99, and how often the seeded issue ranks first),
   then ``--submits`` new issues submitted end to end one after the other (submissions/s), and the same number
   with 4 in flight.

    /work/venv/bin/python bench/gim_perf.py [--sizes 10000,100000] [--real 10000] [--searches 300] [--submits 200]
        [--seeded DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import numpy as np
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.gim_perf_issues import issue, query_for
from tests.plugins.gim.support import served_deployment, write_config

# -- seeding -----------------------------------------------------------------------------------------------------

SEED_BATCH = 2000


def _mixtures(real: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` unit vectors near the span of the real ones: a*x + b*y + noise, normalised."""
    a = real[rng.integers(0, len(real), count)]
    b = real[rng.integers(0, len(real), count)]
    weights = rng.uniform(0.55, 0.85, (count, 1)).astype(np.float32)
    mixed = weights * a + (1 - weights) * b + rng.normal(0, 0.03, a.shape).astype(np.float32)
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


async def seed(config: Path, size: int, real: int, log: Callable[[str], None]) -> tuple[dict[str, float], list[str]]:
    from gateway.app import running_runtime
    from gateway_plugins.gim.bulk import import_masters, prepare_trusted
    from gateway_plugins.gim.schemas import SubmitIssueInput

    timings: dict[str, float] = {}
    ids: list[str] = []
    async with running_runtime(config, configure_logs=False) as runtime:
        core = runtime.packs["gim"].core
        (embedder,) = await core.ensure_embedders()
        kinds = core.kinds
        started = time.perf_counter()
        prepared = [prepare_trusted(SubmitIssueInput.model_validate(issue(i))) for i in range(size)]
        timings["prepare_s"] = time.perf_counter() - started
        started = time.perf_counter()
        really = min(real, size)
        texts = [p.texts[k] for p in prepared[:really] for k in kinds]
        vectors = np.asarray(
            embedder.embed_sync(texts)
            if hasattr(embedder, "embed_sync")
            else await embedder.embed(texts, task="document"),
            dtype=np.float32,
        )
        vectors = vectors.reshape(really, len(kinds), -1)
        timings["embed_s"] = time.perf_counter() - started
        timings["embedded_texts"] = len(texts)
        if size > really:
            rng = np.random.default_rng(11)
            extra = np.stack([_mixtures(vectors[:, k, :], size - really, rng) for k in range(len(kinds))], axis=1)
            vectors = np.concatenate([vectors, extra])
        started = time.perf_counter()
        for start in range(0, size, SEED_BATCH):
            chunk = range(start, min(size, start + SEED_BATCH))
            per_item = [{k: vectors[i, n].tolist() for n, k in enumerate(kinds)} for i in chunk]
            ids += await import_masters(core, [prepared[i] for i in chunk], {embedder.id: per_item})
            log(f"  seeded {chunk.stop}/{size}")
        optimize = getattr(core.vectors.store, "optimize", None)
        if optimize is not None:
            await optimize()
        timings["import_s"] = time.perf_counter() - started
    return timings, ids


# -- measuring over stdio -----------------------------------------------------------------------------------------


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def model_cost(data_dir: Path, samples: int = 100) -> dict[str, float]:
    """The local embedder's own latency on the benchmark's texts (the machine's speed, for context): one search
    query, and one submission's two documents (error signature + resolution)."""
    from gateway_plugins.embedders.local import LocalEmbedder
    from gateway_plugins.gim.bulk import prepare_trusted
    from gateway_plugins.gim.schemas import SubmitIssueInput
    from gateway_plugins.gim.signatures import normalise_error

    embedder = LocalEmbedder.load(cache_dir=data_dir / "providers" / "embedder" / "local")
    prepared = [prepare_trusted(SubmitIssueInput.model_validate(issue(i))) for i in range(samples)]
    queries = [normalise_error(query_for(i)["error_message"]).text for i in range(samples)]
    embedder.embed_sync(queries[:2])
    timings: dict[str, list[float]] = {"query": [], "pair": []}
    for p, q in zip(prepared, queries, strict=True):
        t = time.perf_counter()
        embedder.embed_sync([q])
        timings["query"].append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        embedder.embed_sync([p.texts["error"], p.texts["resolution"]])
        timings["pair"].append((time.perf_counter() - t) * 1000)
    return {"embed_query_ms": statistics.median(timings["query"]), "embed_pair_ms": statistics.median(timings["pair"])}


async def measure(config: Path, ids: list[str], real: int, searches: int, submits: int) -> dict[str, float]:
    size = len(ids)
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)])
    out: dict[str, float] = {"load": os.getloadavg()[0]}
    cpu_before = _cpu_times()
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=600) as client:
        await client.list_tools()
        out["startup_s"] = time.perf_counter() - started
        rng = random.Random(3)
        candidates = list(range(min(real, size)))
        for i in rng.sample(candidates, 10):  # warm-up: model load, caches
            await client.call_tool("gim_search_issues", query_for(i, variant=9))
        latencies, hits = [], 0
        for i in rng.sample(candidates, searches):
            arguments = query_for(i, variant=1)
            t = time.perf_counter()
            result = await client.call_tool("gim_search_issues", arguments)
            latencies.append((time.perf_counter() - t) * 1000)
            issues = (result.structured_content or {}).get("issues", [])
            hits += bool(issues) and issues[0]["issue_id"] == ids[i]
        out.update(
            search_p50_ms=statistics.median(latencies),
            search_p95_ms=_percentile(latencies, 0.95),
            search_p99_ms=_percentile(latencies, 0.99),
        )
        out["search_top1"] = hits / searches
        base = 10_000_000 + size
        t = time.perf_counter()
        merged = 0
        for n in range(submits):
            result = await client.call_tool("gim_submit_issue", issue(base + n))
            assert not result.is_error, result.content
            merged += bool(result.structured_content["merged"])
        out["submit_per_s"] = submits / (time.perf_counter() - t)
        out["submit_merged"] = merged

        async def one(n: int) -> None:
            result = await client.call_tool("gim_submit_issue", issue(base + submits + n))
            assert not result.is_error, result.content

        t = time.perf_counter()
        async with anyio.create_task_group() as group:
            limiter = anyio.Semaphore(4)

            async def bounded(n: int) -> None:
                async with limiter:
                    await one(n)

            for n in range(submits):
                group.start_soon(bounded, n)
        out["submit_concurrent_per_s"] = submits / (time.perf_counter() - t)
    out["steal"] = _steal_share(cpu_before, _cpu_times())
    return out


def _cpu_times() -> list[int]:
    """The machine's CPU time counters (``/proc/stat``; empty where there is none)."""
    try:
        with open("/proc/stat") as stat:
            return [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return []


def _steal_share(before: list[int], after: list[int]) -> float:
    """Share of CPU time the hypervisor gave to other machines meanwhile (``nan`` when unknown). On a shared host
    it makes the same code slower from one minute to the next: read a run's figures with it."""
    if len(before) < 8 or len(after) < 8:
        return math.nan
    delta = [b - a for a, b in zip(before, after, strict=False)]
    return delta[7] / max(1, sum(delta[:8]))


def _default_embedder() -> str:
    """The default deployment's local model variant: a kept seeding is only reused with the same embedder."""
    from gateway_plugins.embedders.config import LocalEmbedderConfig
    from gateway_plugins.embedders.local import model_variant

    return model_variant(LocalEmbedderConfig().precision)


def _keep(data_dir: Path, kept: Path, record: dict[str, Any]) -> None:
    """Copy a freshly seeded deployment to ``kept`` (whole or not at all: a crash leaves no half copy)."""
    partial = kept.with_name(kept.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    shutil.copytree(data_dir, partial / "data")
    (partial / "seeded.json").write_text(json.dumps(record))
    shutil.rmtree(kept, ignore_errors=True)
    partial.rename(kept)


async def seeded_deployment(
    config: Path, data_dir: Path, size: int, real: int, seeded: str | None, log: Callable[[str], None]
) -> tuple[dict[str, float], list[str]]:
    """Seed the deployment of ``config`` (in ``data_dir``) with ``size`` issues, or copy the seeding kept under
    ``seeded`` for this size, ``real`` and embedder; a new seeding is kept there."""
    kept = Path(seeded) / f"{size}-{real}-{_default_embedder()}" if seeded else None
    if kept is not None and (kept / "seeded.json").is_file():
        log(f"size {size}: copying the seeded deployment kept in {kept} ...")
        shutil.copytree(kept / "data", data_dir)
        os.sync()  # the copy's writeback would otherwise compete with the measurement for the disk
        saved = json.loads((kept / "seeded.json").read_text())
        return saved["timings"], saved["ids"]
    log(f"size {size}: seeding ...")
    timings, ids = await seed(config, size, real, log)
    if kept is not None:
        _keep(data_dir, kept, {"timings": timings, "ids": ids})
    return timings, ids


async def run(args: argparse.Namespace) -> None:
    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    rows = []
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        with tempfile.TemporaryDirectory(prefix=f"gim-perf-{size}-", dir=args.tmp) as tmp:
            data_dir = Path(tmp) / "data"
            config = write_config(
                Path(tmp) / "config.toml", served_deployment(data_dir, name="gim-perf", search_limit=100_000_000)
            )
            os.environ["MCP_GATEWAY_DATA_DIR"] = str(data_dir)
            seeded, ids = await seeded_deployment(config, data_dir, size, args.real, args.seeded, log)
            log(f"size {size}: measuring over stdio ...")
            measured = await measure(config, ids, args.real, args.searches, args.submits)
            measured.update(model_cost(data_dir))
            rows.append((size, seeded, measured))
    print()
    header = (
        "issues",
        "real vectors",
        "seed (embed+import)",
        "startup",
        "search p50",
        "search p95",
        "search p99",
        "top-1",
        "submits/s",
        "submits/s (4 in flight)",
        "model: query / 2 docs",
        "load avg",
        "CPU steal",
    )
    table = [header]
    for size, seeded, measured in rows:
        table.append(
            (
                f"{size:,}",
                f"{min(args.real, size):,}",
                f"{seeded['embed_s']:.0f}s + {seeded['import_s']:.0f}s",
                f"{measured['startup_s']:.1f}s",
                f"{measured['search_p50_ms']:.1f} ms",
                f"{measured['search_p95_ms']:.1f} ms",
                f"{measured['search_p99_ms']:.1f} ms",
                f"{measured['search_top1']:.2f}",
                f"{measured['submit_per_s']:.1f}",
                f"{measured['submit_concurrent_per_s']:.1f}",
                f"{measured['embed_query_ms']:.1f} / {measured['embed_pair_ms']:.1f} ms",
                f"{measured['load']:.1f}",
                f"{measured['steal']:.0%}",
            )
        )
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for n, row in enumerate(table):
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--real", type=int, default=10000, help="issues whose vectors come from the real embedder")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--submits", type=int, default=200)
    parser.add_argument("--tmp", default=None, help="where the temporary data dirs go")
    parser.add_argument(
        "--seeded",
        default=None,
        help="keep each seeded deployment here (per size, --real and local model variant) and, on later runs, "
        "measure a fresh copy of it instead of seeding again (seeding 100k takes minutes)",
    )
    from gateway.logs import configure_logging

    configure_logging("warning")  # the in-process seeding's logs go to stderr, not into the table on stdout
    anyio.run(run, parser.parse_args())


if __name__ == "__main__":
    main()
