"""Speed and memory of the context pack.

1. **Full index of flask** (the benchmark's pinned sdist, ~220 files) through the pack's tools, in-process, with the
   local embedder (its ONNX graph already built: a one-off per install, not per index).
2. **One-file edit**: append a function to one file, call ``start``, and time until ``context.search`` finds it.
3. **Search at 100k chunks over MCP stdio**: a corpus of real code (the sources of several pip-downloaded sdists,
   copied until the index holds ``--chunks`` chunks) is indexed through the tools without embeddings; then chunk
   vectors are added: the first ``--real`` code chunks embedded by the real MiniLM, the rest synthetic (normalised
   mixtures of two real vectors plus noise: realistic density for the HNSW index; embedding 100k chunks here would
   take longer than the benchmark is worth). ``gateway serve`` then runs over stdio with the default deployment
   (dense on: every search embeds its query with MiniLM) and ``--searches`` questions are timed at the client
   (p50/p95/p99). RSS is the server's resident memory after the searches.

    bash ../shared/eval/context/fetch_corpus.sh                          # flask, httpx, express
    python3 -m pip download --no-deps --no-binary :all: django==5.1.4 sqlalchemy==2.0.36 sympy==1.13.3 \\
        -d ~/.cache/cebench/perf/dl && (cd ~/.cache/cebench/perf/src && for f in ../dl/*.tar.gz; do tar xzf $f; done)
    ./dev python bench/context_perf.py [--chunks 100000] [--real 2000] [--searches 300] [--skip-100k]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.testing import running_gateway
from tests.plugins.gim.support import seed_model_cache, write_config
from tests.serve_process import find_serve_pid

CACHE = Path.home() / ".cache" / "cebench"
QUERIES = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "context" / "queries_dev.jsonl"


def deployment(data_dir: Path, *, embed: bool) -> dict[str, Any]:
    return {
        "gateway": {"log_level": "warning", "data_dir": data_dir.as_posix()},
        "packs": {"enabled": ["context"]},
        "providers": {
            "embedder": ["local"],
            "vector_store": "qdrant-edge",
            "store": "sqlite",
            "rate_limiter": "memory",
            "auth": "none",
        },
        "plugins": {"context": {"embed": embed}},
    }


async def call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(result.content[0].text)
    return result.structured_content


async def index(client: Any, root: Path, name: str, poll: float = 0.05) -> tuple[str, float]:
    added = await call(
        client,
        "context.connector_management",
        {"action": "add", "connector_config": {"type": "file", "name": name, "root": str(root)}},
    )
    connector_id = added["connectors"][0]["id"]
    started = time.perf_counter()
    await call(client, "context.index_control", {"action": "start", "connectors": [connector_id]})
    while (await call(client, "context.index_control", {"action": "status"}))["status"] == "running":
        await asyncio.sleep(poll)
    return connector_id, time.perf_counter() - started


def model_graph() -> Path:
    from gateway_plugins.embedders.local import LocalEmbedder

    cache = CACHE / "minilm"
    cache.mkdir(parents=True, exist_ok=True)
    if not list(cache.glob("*.onnx")):
        LocalEmbedder.load(cache_dir=cache)
    return next(cache.glob("*.onnx"))


async def flask_and_edit(tmp: Path) -> dict[str, float]:
    source = CACHE / "src" / "flask-3.0.3"
    root = tmp / "flask"
    shutil.copytree(source, root)
    data_dir = tmp / "flask-data"
    seed_model_cache(data_dir, model_graph())
    out: dict[str, float] = {}
    async with running_gateway(deployment(data_dir, embed=True)) as client:
        cpu = time.process_time()  # every thread of this process: the pack, the embedder's passes, the stores
        connector_id, out["flask_index_s"] = await index(client, root, "flask")
        out["flask_index_cpu_s"] = time.process_time() - cpu
        listed = await call(client, "context.connector_management", {"action": "list"})
        stats = listed["connectors"][0]["stats"]
        out["flask_files"], out["flask_chunks"] = stats["documents_indexed"], stats["chunks"]
        target = root / "src" / "flask" / "helpers.py"
        target.write_text(
            target.read_text() + "\n\ndef frobnicate_widget_cache(size):\n"
            '    """Evict the oldest widgets from the frobnication cache."""\n    return size\n'
        )
        started = time.perf_counter()
        await call(client, "context.index_control", {"action": "start", "connectors": [connector_id]})
        while True:
            hits = await call(client, "context.search", {"query": "frobnicate_widget_cache", "top_k": 1})
            if hits["results"] and hits["results"][0]["metadata"]["symbol"] == "frobnicate_widget_cache":
                break
            await asyncio.sleep(0.01)
        out["edit_searchable_s"] = time.perf_counter() - started
    return out


def build_corpus(root: Path, chunks_wanted: int) -> int:
    """Copy real source trees into ``root`` (again under new names when they run out) until ~chunks_wanted."""
    from gateway_plugins.context.chunking import chunk_file

    trees = sorted(p for p in (CACHE / "perf" / "src").iterdir() if p.is_dir())
    trees += [CACHE / "src" / "flask-3.0.3", CACHE / "src" / "httpx-0.27.2"]
    total, copy = 0, 0
    while total < chunks_wanted:
        for tree in trees:
            for path in sorted(tree.rglob("*.py")):
                if total >= chunks_wanted:
                    return total
                try:
                    text = path.read_text(encoding="utf-8")
                except (UnicodeDecodeError, OSError):
                    continue
                rel = path.relative_to(tree.parent)
                target = root / f"copy{copy}" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
                total += len(chunk_file(rel.as_posix(), text).chunks)
        copy += 1
    return total


async def add_vectors(data_dir: Path, real: int) -> dict[str, float]:
    """Vectors for every code chunk: ``real`` embedded by MiniLM, the rest mixtures of those."""
    from gateway.api import VectorPoint
    from gateway_plugins.context.paths import is_secondary

    out: dict[str, float] = {}
    async with running_gateway(deployment(data_dir, embed=True)) as client:
        service = client.runtime.packs["context"].service
        rows = await service.store.fetch_all(
            "SELECT c.id, c.content, c.symbol, f.path, f.id AS file_id, f.connector_id FROM ctx_chunks c "
            "JOIN ctx_files f ON f.id = c.file_id ORDER BY c.id"
        )
        rows = [r for r in rows if not is_secondary(r["path"])]
        (embedder,) = service.context.embeddings().embedders
        started = time.perf_counter()
        texts = [f"{r['path']} {r['symbol'] or ''}\n{r['content']}"[:1000] for r in rows[:real]]
        vectors = np.asarray(await embedder.embed(texts, task="document"), dtype=np.float32)
        out["embed_real_s"] = time.perf_counter() - started
        rng = np.random.default_rng(5)
        extra = len(rows) - len(vectors)
        if extra > 0:
            a = vectors[rng.integers(0, len(vectors), extra)]
            b = vectors[rng.integers(0, len(vectors), extra)]
            w = rng.uniform(0.55, 0.85, (extra, 1)).astype(np.float32)
            mixed = w * a + (1 - w) * b + rng.normal(0, 0.03, a.shape).astype(np.float32)
            vectors = np.concatenate([vectors, mixed / np.linalg.norm(mixed, axis=1, keepdims=True)])
        started = time.perf_counter()
        for start in range(0, len(rows), 2000):
            batch = rows[start : start + 2000]
            points = [
                VectorPoint(
                    r["id"], vectors[start + i].tolist(), {"connector_id": r["connector_id"], "file_id": r["file_id"]}
                )
                for i, r in enumerate(batch)
            ]
            await service.vectors.upsert(embedder, points)
        await service.store.execute("UPDATE ctx_files SET embedded = :e", {"e": embedder.id})
        optimize = getattr(service.vectors.store, "optimize", None)
        if optimize is not None:
            await optimize()
        out["vectors"] = len(rows)
        out["upsert_s"] = time.perf_counter() - started
    return out


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def search_over_stdio(config: Path, searches: int) -> dict[str, float]:
    questions = [json.loads(line)["query"] for line in QUERIES.read_text().splitlines() if line.strip()]
    params = StdioServerParameters(command=sys.executable, args=["-m", "gateway", "serve", "--config", str(config)])
    latencies: list[float] = []
    server: list[float] = []
    out: dict[str, float] = {}
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        await call(client, "context.search", {"query": "warm up the model", "top_k": 20})
        out["first_search_s"] = time.perf_counter() - started
        for n in range(searches):
            began = time.perf_counter()
            result = await call(client, "context.search", {"query": questions[n % len(questions)], "top_k": 20})
            latencies.append((time.perf_counter() - began) * 1000)
            server.append(result["query_metadata"]["execution_time_ms"])
            out["chunks_searched"] = result["query_metadata"]["chunks_searched"]
        pid = find_serve_pid(config)
        out["rss_mb"] = rss_mb(pid) if pid else float("nan")
    server.sort()
    out["server_p50_ms"] = statistics.median(server)
    out["server_p95_ms"] = server[int(0.95 * (len(server) - 1))]
    latencies.sort()
    out["p50_ms"] = statistics.median(latencies)
    out["p95_ms"] = latencies[int(0.95 * (len(latencies) - 1))]
    out["p99_ms"] = latencies[int(0.99 * (len(latencies) - 1))]
    return out


async def large(tmp: Path, chunks: int, real: int, searches: int) -> dict[str, float]:
    root = tmp / "corpus"
    made = build_corpus(root, chunks)
    data_dir = tmp / "large-data"
    seed_model_cache(data_dir, model_graph())
    out: dict[str, float] = {"corpus_chunks": made}
    async with running_gateway(deployment(data_dir, embed=False)) as client:
        _, out["lexical_index_s"] = await index(client, root, "corpus", poll=0.5)
    out.update(await add_vectors(data_dir, real))
    config = write_config(tmp / "large.toml", deployment(data_dir, embed=True))
    out.update(await search_over_stdio(config, searches))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--skip-100k", action="store_true")
    args = parser.parse_args()
    from gateway.logs import configure_logging

    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        small = asyncio.run(flask_and_edit(tmp))
        print("| measurement | value |\n|---|---|")
        print(
            f"| full index of flask ({small['flask_files']:.0f} files, {small['flask_chunks']:.0f} chunks) | "
            f"{small['flask_index_s']:.1f} s wall, {small['flask_index_cpu_s']:.1f} s CPU |"
        )
        print(f"| one-file edit searchable after `start` | {small['edit_searchable_s'] * 1000:.0f} ms |")
        if not args.skip_100k:
            big = asyncio.run(large(tmp, args.chunks, args.real, args.searches))
            print(f"| 100k corpus: chunks | {big['corpus_chunks']:.0f} ({big['chunks_searched']:.0f} searched) |")
            print(f"| 100k corpus: lexical index through the tools | {big['lexical_index_s']:.0f} s |")
            print(
                f"| 100k corpus: vectors ({big['vectors']:.0f}; {args.real} real) upserted | {big['upsert_s']:.0f} s |"
            )
            print(
                f"| `context.search` over stdio, p50 / p95 / p99 ({args.searches} searches) | "
                f"{big['p50_ms']:.1f} / {big['p95_ms']:.1f} / {big['p99_ms']:.1f} ms |"
            )
            print(
                f"| of which in the search itself (`query_metadata.execution_time_ms`), p50 / p95 | "
                f"{big['server_p50_ms']:.0f} / {big['server_p95_ms']:.0f} ms |"
            )
            print(f"| server RSS after the searches | {big['rss_mb']:.0f} MB |")


if __name__ == "__main__":
    main()
