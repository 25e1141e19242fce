"""Calibrate the duplicate decision offline on a split of ``bench/data/gim_dedup`` (or the shared eval set).

For every duplicate submission (report i of a cluster against the cluster's first report, as ``bench/gim_eval.py``
submits them) and every hard-negative pair (side b against side a, and against a's cluster's first report when a
names a cluster), it computes what the hybrid rule looks at, with the deployment's local embedder (int8 MiniLM)
and the pack's own text functions: the dense similarity of the normalised error signatures, the resolution
similarity (root cause + fix), and the agreement checks of :mod:`gateway_plugins.gim.agreement`. Lexical (BM25)
evidence depends on the whole memory and is left out, so error evidence here is the dense part only (a lower
bound of what the gateway sees).

It prints, for a grid of resolution thresholds, the share of duplicates that would merge and of hard-negative
pairs that would merge, without and with the agreement checks, each with a 95 % Wilson interval; ``--pairs`` lists
every pair's scores and conflicts. It never starts a gateway: the figures to report come from
``bench/gim_eval.py``, this script is for choosing the parameters on the calibration part only.

    /work/venv/bin/python bench/gim_dedup_calibrate.py [--split calib] [--eval-dir bench/data/gim_dedup] [--pairs]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.gim_eval import EvalSet, hard_negative_submission, report_submission, wilson
from gateway_plugins.gim.agreement import conflicts
from gateway_plugins.gim.evidence import Facts, extract_facts
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.signatures import normalise_error
from gateway_plugins.gim.texts import error_text, resolution_text


@dataclass
class Case:
    """One submission compared with the master it would join (merge wanted for duplicates, not for pairs)."""

    label: str
    duplicate: bool
    error: float
    resolution: float
    conflicts: list[str]


def _prepared(submission: dict[str, Any]) -> tuple[str, str, FixBundle]:
    fix = FixBundle.model_validate(submission["fix_bundle"])
    message = submission["error_message"]
    return error_text(normalise_error(message), submission["error_description"]), submission["root_cause"], fix


class Embedder:
    def __init__(self) -> None:
        from gateway_plugins.embedders.local import LocalEmbedder

        self._model = LocalEmbedder.load(cache_dir=Path("/tmp/gim-calibrate-cache"))
        self._cache: dict[str, np.ndarray] = {}

    def cosine(self, a: str, b: str) -> float:
        missing = [t for t in (a, b) if t not in self._cache]
        if missing:
            for text, vector in zip(missing, self._model.embed_sync(missing), strict=True):
                self._cache[text] = vector
        return float(np.dot(self._cache[a], self._cache[b]))


def _facts(error: str, root_cause: str, fix: FixBundle) -> Facts:
    return extract_facts(error, root_cause, fix, extra_text=[resolution_text(root_cause, fix)])


def _case(label: str, duplicate: bool, sub: dict[str, Any], masters: list[dict[str, Any]], emb: Embedder) -> Case:
    """``masters``: the master's own submission first, then its children (their errors count as the master's)."""
    error, root_cause, fix = _prepared(sub)
    own = [_prepared(m) for m in masters]
    master_facts = _facts(*own[0])
    for child in own[1:]:  # as gateway_plugins.gim.contradictions reads a matched child: its texts only
        child_facts = extract_facts(child[0], "", None, extra_text=[resolution_text(child[1], child[2])])
        master_facts = master_facts.merged_with(child_facts)
    dense = max(emb.cosine(error, m[0]) for m in own)
    resolution = max(emb.cosine(resolution_text(root_cause, fix), resolution_text(m[1], m[2])) for m in own)
    found = conflicts(_facts(error, root_cause, fix), master_facts)
    return Case(label, duplicate, dense, resolution, [str(c) for c in found])


def build_cases(data: EvalSet, emb: Embedder, *, own_fix: bool) -> list[Case]:
    cases = []
    for cluster in data.clusters:
        first = report_submission(cluster, cluster["reports"][0], cluster["root_cause"])
        for i, report in enumerate(cluster["reports"][1:], start=1):
            paraphrase = cluster["root_cause_paraphrases"][(i - 1) % 2]
            fix = cluster.get("fix_paraphrase") if i == 3 else None
            sub = report_submission(cluster, report, paraphrase, fix)
            cases.append(_case(f"{cluster['cluster_id']}#{i}", True, sub, [first], emb))
    clusters = data.by_id
    for pair in data.hard_negatives:
        a = hard_negative_submission(pair["a"], clusters, own_fix=own_fix)
        b = hard_negative_submission(pair["b"], clusters, own_fix=own_fix)
        cluster = clusters.get(pair["a"].get("cluster_id") or "")
        masters = [a]
        if cluster is not None:  # a joins its cluster's master: b meets that master, with a as a child
            masters = [report_submission(cluster, cluster["reports"][0], cluster["root_cause"]), a]
        cases.append(_case(pair["pair_id"], False, b, masters, emb))
    return cases


def _share(values: list[bool]) -> str:
    k, n = sum(values), len(values)
    low, high = wilson(k, n)
    return f"{k / n:.3f} ({k}/{n}; {low:.3f}-{high:.3f})" if n else "n/a"


def print_sweep(cases: list[Case], error_threshold: float, thresholds: list[float]) -> None:
    dups = [c for c in cases if c.duplicate]
    pairs = [c for c in cases if not c.duplicate]
    print(f"error threshold {error_threshold} (dense only); duplicates {len(dups)}, hard-negative pairs {len(pairs)}")
    print(f"{'resolution':>10}  {'dups merged':<26}  {'false merges':<26}  {'dups merged, checks':<26}  false, checks")
    for t in thresholds:

        def merges(c: Case, checks: bool, t: float = t) -> bool:
            return c.error >= error_threshold and c.resolution >= t and not (checks and c.conflicts)

        cells = [_share([merges(c, checks) for c in group]) for checks in (False, True) for group in (dups, pairs)]
        print(f"{t:>10.2f}  " + "  ".join(f"{cell:<26}" for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", default=str(Path(__file__).resolve().parent / "data" / "gim_dedup"))
    parser.add_argument("--split", default="calib")
    parser.add_argument("--error-thresholds", default="0.5", help="comma-separated")
    parser.add_argument("--hard-negative-fix", choices=["own", "protocol"], default="own")
    parser.add_argument("--pairs", action="store_true", help="list every case's scores and conflicts")
    args = parser.parse_args()
    data = EvalSet.read(Path(args.eval_dir), args.split)
    cases = build_cases(data, Embedder(), own_fix=args.hard_negative_fix == "own")
    if args.pairs:
        for c in cases:
            kind = "dup " if c.duplicate else "pair"
            print(f"{kind} {c.label:<48} error {c.error:.3f}  resolution {c.resolution:.3f}  {'; '.join(c.conflicts)}")
    for error_threshold in (float(t) for t in args.error_thresholds.split(",")):
        print_sweep(cases, error_threshold, [0.66, 0.68, 0.70, 0.72, 0.74, 0.75, 0.76, 0.77, 0.78, 0.80, 0.82])


if __name__ == "__main__":
    main()
