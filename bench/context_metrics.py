"""The code-search benchmark's metrics (``../shared/eval/context/README.md`` section 3), shared by the benchmark
scripts: file recall@1/@5, MRR@10 and symbol hit@5 with the README's four symbol-matching rules."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Returned", "load_spans", "score_query", "table"]


@dataclass(frozen=True)
class Returned:
    """One returned chunk: repo-relative file, symbol (or None), kind, line span."""

    file: str
    symbol: str | None
    kind: str
    start: int
    end: int


def load_spans(path: Path) -> dict[str, list[dict[str, Any]]]:
    """``verify_gold.py --emit-spans`` output, by query id."""
    spans: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            spans[row["id"]] = row["gold_symbols"]
    return spans


def _symbol_match(chunk: Returned, gold: Mapping[str, Any], leaf: bool) -> bool:
    if chunk.file != gold["file"]:
        return False
    if chunk.symbol is not None and chunk.symbol == gold["name"]:
        return True  # (a)
    g_start, g_end = gold["start_line"], gold["end_line"]
    if chunk.kind in ("function", "method") and g_start <= chunk.start and chunk.end <= g_end:
        return True  # (b) a function or method chunk inside the gold span
    if chunk.kind in ("function", "method") and leaf and chunk.start <= g_start and g_end <= chunk.end:
        return True  # (c) a leaf function chunk containing the gold span
    if gold["kind"] == "variable" and chunk.kind == "module" and chunk.start <= g_start <= chunk.end:
        return True  # (d) the module chunk holding a gold constant
    return False


def score_query(
    query: Mapping[str, Any],
    returned: Sequence[Returned],
    spans: Sequence[Mapping[str, Any]],
    is_leaf: Callable[[Returned], bool],
) -> dict[str, float]:
    """The four metrics of one query. ``is_leaf(chunk)``: no other function chunk of the engine's chunking of that
    file lies inside ``chunk`` (rule c)."""
    gold = list(query["gold_files"])
    files: list[str] = []
    for chunk in returned:
        if chunk.file not in files:
            files.append(chunk.file)
    r1 = 1.0 if files and files[0] in gold else 0.0
    r5 = len(set(gold) & set(files[:5])) / min(5, len(gold))
    mrr = 0.0
    for rank, file in enumerate(files[:10], 1):
        if file in gold:
            mrr = 1.0 / rank
            break
    top5 = list(returned[:5])
    sym = 0.0
    for chunk in top5:
        if any(_symbol_match(chunk, g, is_leaf(chunk)) for g in spans):
            sym = 1.0
            break
    return {"r1": r1, "r5": r5, "mrr": mrr, "sym": sym}


def table(rows: Iterable[tuple[Mapping[str, Any], Mapping[str, float]]], title: str) -> str:
    """The README's table: all, per package, per kind."""
    groups: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    order: list[str] = ["all"]
    for query, scores in rows:
        groups["all"].append(scores)
        for key in (query["package"], query["kind"]):
            if key not in groups:
                order.append(key)
            groups[key].append(scores)
    kinds = ["paraphrase", "identifier", "error-message", "multi-file", "context"]
    order = ["all"] + [k for k in order[1:] if k not in kinds] + [k for k in kinds if k in groups]
    out = [f"{title}", "", "| subset | n | R@1 | R@5 | MRR@10 | sym-hit@5 |", "|---|---|---|---|---|---|"]
    for key in order:
        group = groups[key]
        means = {m: sum(s[m] for s in group) / len(group) for m in ("r1", "r5", "mrr", "sym")}
        name = f"**{key}**" if key == "all" else key
        cells = " | ".join(f"{means[m]:.3f}" for m in ("r1", "r5", "mrr", "sym"))
        out.append(f"| {name} | {len(group)} | {cells} |")
    return "\n".join(out)
