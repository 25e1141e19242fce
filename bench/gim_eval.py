"""GIM retrieval and duplicate-detection benchmark on real error reports (``/work/shared/eval`` layout).

Follows the protocol of the evaluation set's README exactly, through a REAL MCP client over stdio: for each
strategy it starts ``python -m gateway serve --config <tmp>/config.toml`` on an empty data dir (the default
deployment: local MiniLM embedder, Qdrant Edge, SQLite, patterns + contextual sanitizers, the rate_limit
interceptor with a quota large enough for the benchmark) and drives it with ``mcp.Client``:

0. distractors submitted; 1. one report per cluster indexed; 2. every other report and extra query searched
(recall@1, recall@5, MRR); 3. the other reports submitted with paraphrased root causes (share merged into the
cluster's master); 4. hard-negative pairs submitted (share of false merges).

Strategies: ``hybrid`` (this pack), ``baseline`` (the public GIM algorithm: ``[plugins.gim] strategy =
"baseline"``), and plain BM25 over the error text (rank-bm25, in-process; retrieval only). A strategy may carry
``[plugins.gim]`` overrides for ablations (``hybrid:lexical_weight=0+environment_boost=0``).

    /work/venv/bin/python bench/gim_eval.py [--eval-dir /work/shared/eval] [--split dev] [--strategies hybrid,baseline]

Our duplicate-decision set (``bench/data/gim_dedup``: calibration, seen and held-out parts) runs the same way:
``--eval-dir bench/data/gim_dedup --split calib|test|holdout|holdout2|holdout3|holdout4|holdout5|holdout6
--distractors /work/shared/eval/distractors_dev.jsonl``.
Its clusters have a ``fix_paraphrase`` (submitted with the third duplicate report). Hard-negative sides are submitted
as the shared protocol says (``--hard-negative-fix protocol``, the default and the primary figure: a side's fix is its
cluster's, else one ``command`` action explaining its root cause); ``--hard-negative-fix own`` gives the sides of our
set their own ``fix`` instead. Rates are printed with their 95 % Wilson interval; ``--details FILE`` writes one JSON
line per duplicate and hard-negative submission.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.plugins.gim.support import served_deployment, write_config

VERIFY = [{"order": 1, "command": "re-run the failing step", "expected_output": "the error no longer appears"}]


def load(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_optional(path: Path) -> list[dict[str, Any]]:
    """A split may lack extra queries or distractors (``bench/data/gim_dedup`` has neither)."""
    return load(path) if path.exists() else []


@dataclass
class EvalSet:
    clusters: list[dict[str, Any]]
    extras: list[dict[str, Any]]
    hard_negatives: list[dict[str, Any]]
    distractors: list[dict[str, Any]]

    @classmethod
    def read(cls, directory: Path, split: str, distractors: Path | None = None) -> EvalSet:
        return cls(
            load(directory / f"errors_{split}.jsonl"),
            load_optional(directory / f"errors_{split}_extra_queries.jsonl"),
            load(directory / f"hard_negatives_{split}.jsonl"),
            load_optional(distractors or directory / f"distractors_{split}.jsonl"),
        )

    @property
    def by_id(self) -> dict[str, dict[str, Any]]:
        return {c["cluster_id"]: c for c in self.clusters}

    def queries(self) -> list[tuple[str, str]]:
        """(cluster id, error text) of every search of step 2."""
        out = [(c["cluster_id"], r["error_message"]) for c in self.clusters for r in c["reports"][1:]]
        return out + [(e["cluster_id"], e["report"]["error_message"]) for e in self.extras]


# -- submissions, exactly as the README says -----------------------------------------------------------------


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[-1] if lines else text)[:200]


def cluster_fix(cluster: dict[str, Any], fix: dict[str, Any] | None = None) -> dict[str, Any]:
    """The fix bundle of a cluster (or ``fix``, a fix of the same shape: a paraphrase, a hard-negative side's)."""
    fix = fix or cluster["fix"]
    bundle: dict[str, Any] = {
        "env_actions": [{"order": i + 1, **action} for i, action in enumerate(fix["env_actions"])],
        "constraints": {"working_versions": fix.get("working_versions", {})},
        "verification": VERIFY,
    }
    if fix.get("code_fix"):
        bundle["code_fix"] = fix["code_fix"]
    return bundle


def environment(language: str, framework: str, os_name: str | None) -> dict[str, str]:
    env = {"language": language, "framework": framework}
    if os_name:
        env["os"] = os_name
    return env


def report_submission(
    cluster: dict[str, Any], report: dict[str, Any], root_cause: str, fix: dict[str, Any] | None = None
) -> dict[str, Any]:
    return {
        "error_message": report["error_message"],
        "error_description": last_line(report["error_message"]),
        "root_cause": root_cause,
        "fix_bundle": cluster_fix(cluster, fix),
        "model": "eval-model",
        "provider": "other",
        "environment": environment(cluster["language"], cluster["framework"], report["environment"].get("os")),
    }


def distractor_submission(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "error_message": item["error_message"],
        "error_description": item["title"],
        "root_cause": item["title"],
        "fix_bundle": {
            "env_actions": [
                {"order": 1, "type": "command", "command": "see the linked thread", "explanation": item["title"]}
            ],
            "verification": VERIFY,
        },
        "model": "eval-model",
        "provider": "other",
        "environment": {"language": item["language"], "framework": item["framework"]},
    }


def hard_negative_submission(
    side: dict[str, Any], clusters: dict[str, dict[str, Any]], *, own_fix: bool = True
) -> dict[str, Any]:
    """A side's fix: its own ``fix`` (``bench/data/gim_dedup`` sides carry one) unless ``own_fix`` is off, else its
    cluster's, else one ``command`` action explaining the root cause (the shared protocol)."""
    cluster = clusters.get(side.get("cluster_id") or "")
    if own_fix and side.get("fix"):
        fix = cluster_fix(side, side["fix"])
    elif cluster is not None:
        fix = cluster_fix(cluster)
    else:
        action = {"order": 1, "type": "command", "command": "see the linked thread", "explanation": side["root_cause"]}
        fix = {"env_actions": [action], "verification": VERIFY}
    return {
        "error_message": side["error_message"],
        "error_description": last_line(side["error_message"]),
        "root_cause": side["root_cause"],
        "fix_bundle": fix,
        "model": "eval-model",
        "provider": "other",
        "environment": environment(side["language"], side["framework"], side["environment"].get("os")),
    }


# -- metrics ------------------------------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    ranks: list[int | None] = field(default_factory=list)
    merged: list[bool] = field(default_factory=list)
    false_merges: list[bool] = field(default_factory=list)
    details: list[dict[str, Any]] = field(default_factory=list)
    """One record per duplicate or hard-negative submission (``--details``)."""
    errors: int = 0
    seconds: float = 0.0

    def recall(self, k: int) -> float:
        return sum(1 for r in self.ranks if r is not None and r <= k) / max(1, len(self.ranks))

    @property
    def mrr(self) -> float:
        return sum(1.0 / r for r in self.ranks if r) / max(1, len(self.ranks))

    def row(self) -> list[str]:
        def share(values: list[bool]) -> str:
            if not values:
                return "n/a"
            low, high = wilson(sum(values), len(values))
            return f"{sum(values) / len(values):.3f} ({sum(values)}/{len(values)}; {low:.3f}-{high:.3f})"

        return [
            self.name,
            f"{self.recall(1):.3f}" if self.ranks else "n/a",
            f"{self.recall(5):.3f}" if self.ranks else "n/a",
            f"{self.mrr:.3f}" if self.ranks else "n/a",
            share(self.merged),
            share(self.false_merges),
            str(self.errors),
            f"{self.seconds:.0f}s",
        ]


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95 % by default)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


class Gateway:
    """One gateway subprocess over stdio."""

    def __init__(self, client: Client, result: Result) -> None:
        self.client = client
        self.result = result

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        reply = await self.client.call_tool(tool, arguments)
        if reply.is_error:
            self.result.errors += 1
            print(f"  {tool} failed: {reply.content[0].text[:300] if reply.content else reply}", file=sys.stderr)
            return None
        return reply.structured_content

    async def submit(self, submission: dict[str, Any]) -> dict[str, Any] | None:
        return await self.call("gim_submit_issue", submission)


def parse_strategy(spec: str) -> tuple[str, dict[str, str]]:
    """``hybrid`` or ``hybrid:lexical_weight=0+environment_boost=0`` (``[plugins.gim]`` overrides, TOML values)."""
    name, _, rest = spec.partition(":")
    overrides = dict(part.split("=", 1) for part in rest.split("+") if part)
    return name, overrides


async def run_gateway(data: EvalSet, spec: str, workdir: Path, number: int, *, own_fix: bool = True) -> Result:
    strategy, overrides = parse_strategy(spec)
    result = Result(spec)
    data_dir = workdir / f"data-{number}"
    config = workdir / f"config-{number}.toml"
    gim = {"strategy": strategy} | {key: tomllib.loads(f"v = {value}")["v"] for key, value in overrides.items()}
    write_config(config, served_deployment(data_dir, name="gim-eval", search_limit=1_000_000, gim=gim))
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gateway", "serve", "--config", str(config)],
        env={**os.environ, "MCP_GATEWAY_DATA_DIR": str(data_dir)},
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        gw = Gateway(client, result)
        for item in data.distractors:
            await gw.submit(distractor_submission(item))
        masters: dict[str, str | None] = {}
        for cluster in data.clusters:
            answer = await gw.submit(report_submission(cluster, cluster["reports"][0], cluster["root_cause"]))
            masters[cluster["cluster_id"]] = answer["master_issue_id"] if answer else None
        for cluster_id, text in data.queries():
            answer = await gw.call(
                "gim_search_issues",
                {"error_message": text, "environment": _search_env(data.by_id[cluster_id]), "limit": 10},
            )
            ids = [issue["issue_id"] for issue in (answer or {}).get("issues", [])]
            target = masters[cluster_id]
            result.ranks.append(ids.index(target) + 1 if target in ids else None)
        for cluster in data.clusters:
            for i, report in enumerate(cluster["reports"][1:], start=1):
                paraphrase = cluster["root_cause_paraphrases"][(i - 1) % 2]
                # bench/data/gim_dedup: the third duplicate also words the fix differently (absent on dev)
                fix = cluster.get("fix_paraphrase") if i == 3 else None
                answer = await gw.submit(report_submission(cluster, report, paraphrase, fix))
                result.merged.append(
                    bool(answer and answer["merged"] and answer["master_issue_id"] == masters[cluster["cluster_id"]])
                )
                result.details.append(
                    {"duplicate": cluster["cluster_id"], "report": i, "correct": result.merged[-1], "answer": answer}
                )
        clusters = data.by_id
        for pair in data.hard_negatives:
            a = await gw.submit(hard_negative_submission(pair["a"], clusters, own_fix=own_fix))
            b = await gw.submit(hard_negative_submission(pair["b"], clusters, own_fix=own_fix))
            result.false_merges.append(bool(a and b and a["master_issue_id"] == b["master_issue_id"]))
            result.details.append({"pair": pair["pair_id"], "false_merge": result.false_merges[-1], "a": a, "b": b})
    result.seconds = time.perf_counter() - started
    return result


def _search_env(cluster: dict[str, Any]) -> dict[str, str]:
    return {"language": cluster["language"], "framework": cluster["framework"]}


def run_bm25(data: EvalSet) -> Result:
    """Plain BM25 (rank-bm25 Okapi, default parameters) over the submitted error texts; no duplicate handling."""
    from rank_bm25 import BM25Okapi

    def tokens(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    started = time.perf_counter()
    owners: list[str | None] = [None] * len(data.distractors)
    documents = [tokens(d["error_message"]) for d in data.distractors]
    for cluster in data.clusters:
        documents.append(tokens(cluster["reports"][0]["error_message"]))
        owners.append(cluster["cluster_id"])
    index = BM25Okapi(documents)
    result = Result("bm25 (error text)")
    for cluster_id, text in data.queries():
        scores = index.get_scores(tokens(text))
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:10]
        ranked = [owners[i] for i in order]
        result.ranks.append(ranked.index(cluster_id) + 1 if cluster_id in ranked else None)
    result.seconds = time.perf_counter() - started
    return result


def print_table(results: list[Result], data: EvalSet) -> None:
    header = ["strategy", "recall@1", "recall@5", "MRR", "dups merged", "false merges", "errors", "time"]
    rows = [header, *[r.row() for r in results]]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    print(
        f"\nqueries: {len(data.queries())}, duplicates: {sum(len(c['reports']) - 1 for c in data.clusters)}, "
        f"hard-negative pairs: {len(data.hard_negatives)}, distractors: {len(data.distractors)}"
    )
    for n, row in enumerate(rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))
        if n == 0:
            print("  ".join("-" * w for w in widths))


async def main_async(args: argparse.Namespace) -> None:
    data = EvalSet.read(Path(args.eval_dir), args.split, Path(args.distractors) if args.distractors else None)
    results = []
    own_fix = args.hard_negative_fix == "own"
    with tempfile.TemporaryDirectory(prefix="gim-eval-") as tmp:
        for number, spec in enumerate(s.strip() for s in args.strategies.split(",") if s.strip()):
            print(f"running {spec} ...", file=sys.stderr)
            results.append(await run_gateway(data, spec, Path(tmp), number, own_fix=own_fix))
    if not args.no_bm25:
        results.append(run_bm25(data))
    print_table(results, data)
    if args.details:
        with open(args.details, "w") as out:
            for result in results:
                for record in result.details:
                    out.write(json.dumps({"strategy": result.name, **record}) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", default="/work/shared/eval")
    parser.add_argument("--split", default="dev")
    parser.add_argument(
        "--strategies",
        default="hybrid,baseline",
        help="comma-separated; each may carry [plugins.gim] overrides: hybrid:lexical_weight=0+environment_boost=0",
    )
    parser.add_argument("--no-bm25", action="store_true")
    parser.add_argument("--details", help="write one JSON line per duplicate / hard-negative submission here")
    parser.add_argument("--distractors", help="distractors file (default: distractors_<split>.jsonl, if present)")
    parser.add_argument(
        "--hard-negative-fix",
        choices=["own", "protocol"],
        default="protocol",
        help="protocol (the shared protocol's step 4): the side's cluster's fix, else one command action explaining "
        "its root cause; own: a side's own `fix` when it has one",
    )
    anyio.run(main_async, parser.parse_args())


if __name__ == "__main__":
    main()
