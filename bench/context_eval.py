"""Code-search quality of the context pack on the benchmark of ``../shared/eval/context`` (development split) or on
a held-out split: ``bench/data/context_heldout`` or ``context_heldout2`` to ``context_heldout6`` (other packages, same
rules).

Each package is indexed into a deployment of its own (the protocol scores each package against its own index) through
the pack's own tools (``context.connector_management`` add, ``context.index_control``
start, status until done) and every question is asked through ``context.search`` over the MCP SDK client
(in-process). Prints the benchmark README's table (all / per package / per kind), with and without
``work_context``, and with ``--ablation`` the contribution of each ranking stage (same index, ranking switched).

    bash ../shared/eval/context/fetch_corpus.sh            # once: the pinned packages
    ./dev python bench/context_eval.py [--ablation] [--no-embed] [--corpus ~/.cache/cebench/src]
    bash bench/data/context_heldout/fetch_corpus.sh       # once: the held-out packages
    ./dev python bench/context_eval.py --split heldout [--ablation]
    bash bench/data/context_heldout2/fetch_corpus.sh      # once: the second held-out packages
    ./dev python bench/context_eval.py --split heldout2 [--ablation]
    bash bench/data/context_heldout3/fetch_corpus.sh      # once: the third held-out packages
    ./dev python bench/context_eval.py --split heldout3 [--ablation]
    bash bench/data/context_heldout4/fetch_corpus.sh      # once: the fourth held-out packages
    ./dev python bench/context_eval.py --split heldout4 [--ablation]
    bash bench/data/context_heldout5/fetch_corpus.sh      # once: the fifth held-out packages
    ./dev python bench/context_eval.py --split heldout5 [--ablation]
    bash bench/data/context_heldout6/fetch_corpus.sh      # once: the sixth held-out packages
    ./dev python bench/context_eval.py --split heldout6 [--ablation]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from context_metrics import Returned, load_spans, score_query, table

from gateway.testing import running_gateway
from gateway_plugins.context.chunking import chunk_file

EVAL = Path(__file__).resolve().parents[1].parent / "shared" / "eval" / "context"
DATA = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Split:
    """A query file, its gold checker (with its arguments), the default corpus folder and each package's root in it."""

    queries: Path
    verify: Path
    corpus: Path
    roots: dict[str, str]
    verify_args: tuple[str, ...] = ()


def _heldout(name: str) -> Split:
    """A held-out split folder ``bench/data/context_<name>``: ``corpus.json``, ``queries_<name>.jsonl``, fetched into
    ``~/.cache/cebench-<name>/src``; checked by the first held-out split's ``verify_gold.py --split <folder>``."""
    folder = DATA / f"context_{name}"
    roots = {package: pin["root"] for package, pin in json.loads((folder / "corpus.json").read_text()).items()}
    return Split(
        folder / f"queries_{name}.jsonl",
        DATA / "context_heldout" / "verify_gold.py",
        Path.home() / ".cache" / f"cebench-{name}" / "src",
        roots,
        ("--split", str(folder)),
    )


SPLITS = {
    "dev": lambda: Split(
        EVAL / "queries_dev.jsonl",
        EVAL / "verify_gold.py",
        Path.home() / ".cache" / "cebench" / "src",
        {"flask": "flask-3.0.3", "httpx": "httpx-0.27.2", "express": "express-4.21.1/package"},
    ),
    "heldout": lambda: _heldout("heldout"),
    "heldout2": lambda: _heldout("heldout2"),
    "heldout3": lambda: _heldout("heldout3"),
    "heldout4": lambda: _heldout("heldout4"),
    "heldout5": lambda: _heldout("heldout5"),
    "heldout6": lambda: _heldout("heldout6"),
}
ROOTS: dict[str, str] = {}
"""Package -> repository root under the corpus folder, of the split being run."""

ABLATION: dict[str, dict[str, Any]] = {
    "lexical only (BM25, identifier-aware)": {
        "structural": False,
        "messages": False,
        "graph": False,
        "dense_weight": 0.0,
        "second_chunk_bonus": 0.0,
    },
    "+ structural (names, paths, definitions, priors)": {"messages": False, "graph": False, "dense_weight": 0.0},
    "+ error-message literals": {"graph": False, "dense_weight": 0.0},
    "+ active-file graph": {"dense_weight": 0.0},
    "+ dense (full pipeline)": {},
    "full without structural": {"structural": False},
}


PACK_OPTIONS: dict[str, Any] = {}
"""Extra ``[plugins.context]`` keys from ``--option key=value``."""


def config(data_dir: Path, *, embed: bool, ranking: dict[str, Any]) -> dict[str, Any]:
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
        "plugins": {"context": {"embed": embed, "ranking": ranking, **PACK_OPTIONS}},
    }


async def call(client: Any, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    if result.is_error:
        raise RuntimeError(f"{tool}: {result.content[0].text}")
    return result.structured_content


async def index_package(data_dir: Path, root: Path, package: str, embed: bool) -> None:
    """Index one package into its own deployment (the protocol: each package is scored against its own index)."""
    async with running_gateway(config(data_dir, embed=embed, ranking={})) as client:
        added = await call(
            client,
            "context.connector_management",
            {"action": "add", "connector_config": {"type": "file", "name": package, "root": str(root)}},
        )
        connector_id = added["connectors"][0]["id"]
        started = time.perf_counter()
        await call(client, "context.index_control", {"action": "start", "connectors": [connector_id]})
        while (await call(client, "context.index_control", {"action": "status"}))["status"] == "running":
            await asyncio.sleep(0.2)
        listed = await call(client, "context.connector_management", {"action": "list"})
        stats = listed["connectors"][0]["stats"]
        print(
            f"indexed {package}: {stats['documents_indexed']} files, {stats['chunks']} chunks, "
            f"{time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )


def leaf_checker(corpus: Path) -> Any:
    """Rule (c) needs the engine's own chunking: a function chunk is a leaf when none of its file's other
    function chunks lies inside it."""
    cache: dict[tuple[str, str], list[tuple[int, int, str]]] = {}

    def is_leaf(package: str, chunk: Returned) -> bool:
        key = (package, chunk.file)
        if key not in cache:
            path = corpus / ROOTS[package] / chunk.file
            chunks = chunk_file(chunk.file, path.read_text(encoding="utf-8")).chunks
            cache[key] = [(c.start_line, c.end_line, c.kind) for c in chunks]
        return not any(
            chunk.start <= s and e <= chunk.end and (s, e) != (chunk.start, chunk.end) and k in ("function", "method")
            for s, e, k in cache[key]
        )

    return is_leaf


async def ask_all(
    base: Path,
    queries: list[dict],
    spans: dict,
    corpus: Path,
    embed: bool,
    ranking: dict[str, Any],
    use_context: bool,
    misses: bool = False,
) -> list[tuple[dict, dict]]:
    """Every question through ``context.search``, each package against its own deployment."""
    rows = []
    is_leaf = leaf_checker(corpus)
    for package in ROOTS:
        async with running_gateway(config(base / package, embed=embed, ranking=ranking)) as client:
            for query in (q for q in queries if q["package"] == package):
                args: dict[str, Any] = {"query": query["query"], "top_k": 20}
                if use_context and query["work_context"]:
                    args["work_context"] = query["work_context"]
                result = await call(client, "context.search", args)
                returned = []
                for r in result["results"]:
                    start, end = (int(x) for x in r["metadata"]["lines"].split("-"))
                    returned.append(
                        Returned(r["metadata"]["path"], r["metadata"]["symbol"], r["metadata"]["type"], start, end)
                    )
                scores = score_query(query, returned, spans[query["id"]], lambda c, p=package: is_leaf(p, c))
                rows.append((query, scores))
                if misses and (scores["r1"] < 1 or scores["sym"] < 1):
                    print(query["id"], scores, [(x.file, x.symbol) for x in returned[:5]], file=sys.stderr)
    return rows


def main() -> None:
    from gateway.logs import configure_logging

    configure_logging("warning")
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=sorted(SPLITS), default="dev", help="which benchmark split to run")
    parser.add_argument("--corpus", type=Path, help="folder of the unpacked packages (default: the split's)")
    parser.add_argument("--queries", type=Path, help="a query file of the split's packages (default: the split's)")
    parser.add_argument("--ablation", action="store_true", help="also print each ranking stage's contribution")
    parser.add_argument("--no-embed", action="store_true", help="index without the embedder (lexical only)")
    parser.add_argument("--misses", action="store_true", help="print the queries the full pipeline misses")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a [plugins.context] key for this run (JSON value), e.g. max_embed_chars=600",
    )
    args = parser.parse_args()
    for option in args.option:
        key, _, value = option.partition("=")
        PACK_OPTIONS[key] = json.loads(value)
    split = SPLITS[args.split]()
    args.corpus = args.corpus or split.corpus
    args.queries = args.queries or split.queries
    queries = [json.loads(line) for line in args.queries.read_text().splitlines() if line.strip()]
    asked = {query["package"] for query in queries}
    ROOTS.update((package, root) for package, root in split.roots.items() if package in asked)
    spans_file = Path(tempfile.mkdtemp()) / "spans.jsonl"
    subprocess.run(
        [
            sys.executable,
            str(split.verify),
            *split.verify_args,
            "--corpus",
            str(args.corpus),
            "--queries",
            str(args.queries),
            "--emit-spans",
            str(spans_file),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    spans = load_spans(spans_file)
    embed = not args.no_embed
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        for package, root in ROOTS.items():
            asyncio.run(index_package(data_dir / package, args.corpus / root, package, embed))
        full = {} if embed else {"dense_weight": 0.0}
        rows = asyncio.run(ask_all(data_dir, queries, spans, args.corpus, embed, full, True, misses=args.misses))
        print(table(rows, f"with work_context (embed={embed})"))
        print()
        rows = asyncio.run(ask_all(data_dir, queries, spans, args.corpus, embed, full, False))
        print(table(rows, "without work_context"))
        if args.ablation:
            print("\nAblation (all queries, with work_context):\n")
            print("| stages | R@1 | R@5 | MRR@10 | sym-hit@5 |\n|---|---|---|---|---|")
            for name, ranking in ABLATION.items():
                if not embed and ranking.get("dense_weight", 0.3) != 0.0:
                    continue
                rows = asyncio.run(ask_all(data_dir, queries, spans, args.corpus, embed, ranking, True))
                means = [sum(s[m] for _, s in rows) / len(rows) for m in ("r1", "r5", "mrr", "sym")]
                print(f"| {name} | " + " | ".join(f"{m:.3f}" for m in means) + " |")


if __name__ == "__main__":
    main()
