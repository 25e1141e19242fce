"""Vector search on this machine: the local embedder and the ``qdrant-edge`` store, in one run.

    python bench/vectors.py [--sizes 10000,100000] [--queries 200] [--dir PATH] [--no-embedder]

* Local embedder (all-MiniLM-L6-v2 on onnxruntime): load time with and without the cached ONNX graph, and
  embeddings per second one text at a time and in batches of 32 (error-message-like texts).
* Qdrant Edge, for each size: 384-dimensional clustered unit vectors (256 clusters, like embeddings of related
  texts) with a ``lang`` payload field (10 values, keyword-indexed), written through the store's async API in
  batches of 256 with the default settings, so the automatic index builds are part of the load; ``optimize()``
  afterwards (it indexes what the automatic builds left, if that is above the engine's indexing threshold). Then
  the store is closed and reopened in a fresh process, which reports the reopen time (store creation + opening the
  collection) and its resident memory (from /proc; it holds nothing but the interpreter, the imports and the store).
* Queries (top 10, without and with a filter matching 10 % of the points), measured right after the load and in
  the reopened process: wall-clock latency, process CPU time per query (the engine's search threads included:
  what a query costs when the machine is not shared; wall-clock percentiles on a busy machine mostly measure
  waiting for a CPU), and recall@10 against exact numpy search.
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import structlog

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gateway.api import VectorPoint  # noqa: E402
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig, QdrantEdgeStore  # noqa: E402

DIM = 384
CLUSTERS = 256
LANGS = ("python", "go", "rust", "typescript", "java", "c", "ruby", "php", "kotlin", "swift")
COLLECTION = "bench__clustered-384"
BATCH = 256
TOP = 10
BUILDS: list[str] = []  # one entry per automatic index build (counted from the store's log events)


def count_builds(_: Any, __: str, event: dict[str, Any]) -> dict[str, Any]:
    if event.get("event") == "building the vector index":
        BUILDS.append(event["collection"])
    return event


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def clustered(count: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    which = rng.integers(len(centers), size=count)
    vectors = centers[which] + rng.standard_normal((count, centers.shape[1]), dtype=np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def exact_top(data: np.ndarray, ids: list[str], queries: np.ndarray, filtered: bool) -> list[set[str]]:
    langs = np.arange(len(data)) % len(LANGS)
    tops = []
    for i, query in enumerate(queries):
        scores = data @ query
        if filtered:
            scores = np.where(langs == i % len(LANGS), scores, -np.inf)
        tops.append({ids[j] for j in np.argpartition(-scores, TOP)[:TOP]})
    return tops


async def query_stats(
    store: QdrantEdgeStore, queries: np.ndarray, filtered: bool, exact: list[set[str]] | None
) -> dict[str, float]:
    wall, cpu, hits = [], [], []
    for i, query in enumerate(queries):
        flt = {"lang": LANGS[i % len(LANGS)]} if filtered else None
        started, started_cpu = time.perf_counter(), time.process_time()
        found = await store.query(COLLECTION, query, limit=TOP, filter=flt)
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
        if exact is not None:
            hits.append(len({p.id for p in found} & exact[i]) / TOP)
    p50, p95 = np.percentile(np.asarray(wall) * 1000, [50, 95])
    c50, c95 = np.percentile(np.asarray(cpu) * 1000, [50, 95])
    stats = {"p50": p50, "p95": p95, "cpu50": c50, "cpu95": c95}
    if hits:
        stats["recall"] = float(np.mean(hits))
    return stats


async def all_query_stats(store, queries, exact_plain, exact_filtered, phase: str) -> list[dict[str, Any]]:
    await query_stats(store, queries[:20], False, None)  # warm-up
    rows = []
    for filtered, exact in ((False, exact_plain), (True, exact_filtered)):
        row = await query_stats(store, queries, filtered, exact)
        row.update(phase=phase, filter="lang (10 %)" if filtered else "none")
        rows.append(row)
    return rows


async def bench_edge(size: int, root: Path, n_queries: int, kind: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rng = np.random.default_rng(size)
    if kind == "random":  # uniform on the sphere: the hardest case for HNSW and for quantization
        centers = np.zeros((1, DIM), dtype=np.float32)
    else:
        centers = rng.standard_normal((CLUSTERS, DIM), dtype=np.float32) * 1.2
    data = clustered(size, rng, centers)
    queries = clustered(n_queries, rng, centers)
    ids = [str(uuid.uuid4()) for _ in range(size)]
    exact_plain, exact_filtered = exact_top(data, ids, queries, False), exact_top(data, ids, queries, True)
    directory = root / f"edge-{size}"
    shutil.rmtree(directory, ignore_errors=True)

    BUILDS.clear()
    store = QdrantEdgeStore(directory, QdrantEdgeConfig())
    await store.ensure_collection(COLLECTION, dimension=DIM, indexed_fields={"lang": "keyword"})
    started = time.perf_counter()
    for start in range(0, size, BATCH):
        stop = min(size, start + BATCH)
        batch = [VectorPoint(ids[i], data[i], {"lang": LANGS[i % len(LANGS)], "n": i}) for i in range(start, stop)]
        await store.upsert(COLLECTION, batch)
    await store.flush()
    load_seconds = time.perf_counter() - started
    builds = len(BUILDS)
    started = time.perf_counter()
    await store.optimize(COLLECTION)
    optimize_seconds = time.perf_counter() - started
    info = await store.info(COLLECTION)
    rows = await all_query_stats(store, queries, exact_plain, exact_filtered, "after load")
    rss_loaded = rss_mb()
    await store.close()

    query_file = root / f"queries-{size}.npy"
    np.save(query_file, queries)
    exact_file = root / f"exact-{size}.json"
    exact_file.write_text(json.dumps([[sorted(s) for s in exact_plain], [sorted(s) for s in exact_filtered]]))
    child = subprocess.run(
        [sys.executable, __file__, "--reopen", str(directory), str(query_file), str(exact_file)],
        capture_output=True,
        text=True,
        check=True,
    )
    reopened = json.loads(child.stdout.strip().splitlines()[-1])
    rows += reopened.pop("rows")
    load = {
        "size": size,
        "upserts": size / load_seconds,
        "builds": builds,
        "optimize_s": optimize_seconds,
        "indexed": f"{info.indexed_vectors}/{info.points}",
        "segments": info.segments,
        "rss_loaded": rss_loaded,
        **reopened,
    }
    for row in rows:
        row["size"] = size
    return load, rows


async def reopen(directory: Path, query_file: Path, exact_file: Path) -> None:
    queries = np.load(query_file)
    exact_plain, exact_filtered = ([set(s) for s in part] for part in json.loads(exact_file.read_text()))
    baseline = rss_mb()
    started = time.perf_counter()
    store = QdrantEdgeStore(directory, QdrantEdgeConfig())
    await store.count(COLLECTION)
    reopen_seconds = time.perf_counter() - started
    started = time.perf_counter()
    await store.query(COLLECTION, queries[0], limit=TOP)
    first_query = time.perf_counter() - started
    rows = await all_query_stats(store, queries, exact_plain, exact_filtered, "reopened")
    result = {
        "reopen_s": reopen_seconds,
        "first_query_ms": first_query * 1000,
        "rss": rss_mb(),
        "rss_baseline": baseline,
        "rows": rows,
    }
    await store.close()
    print(json.dumps(result))


def bench_embedder(root: Path) -> list[tuple[str, str]]:
    """Both precisions of the local embedder on the same short error texts (batch 1 is a query's or a
    submission document's case; batch 32 a reindex's), and how far int8 vectors are from fp32 ones."""
    try:
        from gateway_plugins.embedders.config import LocalEmbedderConfig, Precision
        from gateway_plugins.embedders.local import LocalEmbedder
    except ImportError as exc:
        return [("local embedder", f"not available: {exc}")]
    kinds = ("TypeError", "ModuleNotFoundError", "KeyError", "ValueError")
    details = ("'NoneType' object is not subscriptable", "No module named 'numpy'", "unexpected keyword argument")
    modules = ("app", "server", "utils", "models", "views", "tasks", "cli", "db")
    texts = [f"{k}: {d} in {m}.py line {i}" for i, (k, d, m) in enumerate(itertools.product(kinds, details, modules))]
    texts = (texts * 4)[:320]
    rows: list[tuple[str, str]] = []
    vectors: dict[str, np.ndarray] = {}
    precisions: tuple[Precision, ...] = ("int8", "fp32")
    for precision in precisions:
        cache = root / "embedder-cache"
        config = LocalEmbedderConfig(precision=precision)
        started = time.perf_counter()
        LocalEmbedder.load(config, cache_dir=cache)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        embedder = LocalEmbedder.load(config, cache_dir=cache)
        warm = time.perf_counter() - started
        embedder.embed_sync(texts[:8])  # warm-up
        started, cpu = time.perf_counter(), time.process_time()
        for text in texts[:100]:
            embedder.embed_sync([text])
        one, one_cpu = 100 / (time.perf_counter() - started), (time.process_time() - cpu) / 100 * 1000
        started = time.perf_counter()
        for start in range(0, len(texts), 32):
            embedder.embed_sync(texts[start : start + 32])
        batched = len(texts) / (time.perf_counter() - started)
        vectors[precision] = embedder.embed_sync(texts[:96])
        rows += [
            (f"{precision}: load, cold (builds the ONNX graph)", f"{cold:.2f} s"),
            (f"{precision}: load, warm (cached graph)", f"{warm:.2f} s"),
            (f"{precision}: embeddings/s, batch 1 (CPU ms each)", f"{one:.0f} ({one_cpu:.1f})"),
            (f"{precision}: embeddings/s, batch 32", f"{batched:.0f}"),
        ]
    cosines = (vectors["int8"] * vectors["fp32"]).sum(axis=1)
    rows.append(("int8 vs fp32: cosine min / mean", f"{cosines.min():.4f} / {cosines.mean():.4f}"))
    return rows


def table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    text = {i for i, h in enumerate(header) if h in ("measure", "phase", "filter")}
    for row in rows:
        cells = (c.ljust(w) if i in text else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        print("| " + " | ".join(cells) + " |")


def report(
    embedder: list[tuple[str, str]], loads: list[dict[str, Any]], queries: list[dict[str, Any]], kind: str
) -> None:
    print(f"machine: {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.1f} at the end of the run\n")
    if embedder:
        print("local embedder (all-MiniLM-L6-v2, onnxruntime, CPU)\n")
        table(("measure", "value"), embedder)
        print()
    print(f"qdrant-edge: load and reopen ({DIM} dims, {kind} vectors, default settings; RSS from /proc)\n")
    table(
        ("vectors", "upsert/s (incl. auto builds)", "auto builds", "optimize() s", "indexed", "segments",
         "reopen s", "1st query ms", "RSS MB reopened (baseline)", "RSS MB loader"),
        [
            (str(x["size"]), f"{x['upserts']:.0f}", str(x["builds"]), f"{x['optimize_s']:.1f}", x["indexed"],
             str(x["segments"]), f"{x['reopen_s']:.2f}", f"{x['first_query_ms']:.1f}",
             f"{x['rss']:.0f} ({x['rss_baseline']:.0f})", f"{x['rss_loaded']:.0f}")
            for x in loads
        ],
    )  # fmt: skip
    print(f"\nqdrant-edge: queries (top {TOP}; wall-clock ms, process CPU ms per query, recall@{TOP} vs exact)\n")
    table(
        ("vectors", "phase", "filter", "p50 ms", "p95 ms", "CPU p50", "CPU p95", "recall"),
        [
            (str(r["size"]), r["phase"], r["filter"], f"{r['p50']:.2f}", f"{r['p95']:.2f}", f"{r['cpu50']:.2f}",
             f"{r['cpu95']:.2f}", f"{r['recall']:.3f}")
            for r in queries
        ],
    )  # fmt: skip
    print("\nloader RSS includes the data set and the exact-search inputs of this script.")


async def main(sizes: list[int], n_queries: int, root: Path, embedder: bool, kind: str) -> None:
    loads, queries = [], []
    for size in sizes:
        load, rows = await bench_edge(size, root, n_queries, kind)
        loads.append(load)
        queries += rows
    embedder_rows = bench_embedder(root) if embedder else []
    report(embedder_rows, loads, queries, kind)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated collection sizes")
    parser.add_argument("--queries", type=int, default=200, help="queries per measurement")
    parser.add_argument("--dir", type=Path, help="where the stores go (default: a temporary directory)")
    parser.add_argument("--no-embedder", action="store_true", help="skip the local embedder")
    parser.add_argument(
        "--data", choices=("clustered", "random"), default="clustered", help="clustered or uniform random vectors"
    )
    parser.add_argument("--reopen", nargs=3, metavar=("DIR", "QUERIES", "EXACT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    structlog.configure(
        processors=[count_builds, structlog.processors.add_log_level, structlog.dev.ConsoleRenderer(colors=False)],
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        wrapper_class=structlog.make_filtering_bound_logger(logging.INFO),
    )
    if args.reopen:
        anyio.run(reopen, *(Path(p) for p in args.reopen))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.dir:
        args.dir.mkdir(parents=True, exist_ok=True)
        anyio.run(main, sizes, args.queries, args.dir, not args.no_embedder, args.data)
        return
    with tempfile.TemporaryDirectory(prefix="bench-vectors-") as tmp:
        anyio.run(main, sizes, args.queries, Path(tmp), not args.no_embedder, args.data)


if __name__ == "__main__":
    cli()
