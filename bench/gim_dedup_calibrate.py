"""Calibrate the duplicate decision offline on a split of ``bench/data/gim_dedup`` (or the shared eval set).

For every duplicate submission (report i of a cluster against the cluster's first report, as ``bench/gim_eval.py``
submits them) and every hard-negative pair (side b against side a, and against a's cluster's first report when a
names a cluster), it computes what the hybrid rule looks at, with the deployment's local embedder (int8 MiniLM)
and the pack's own functions: the dense similarity of the normalised error signatures, the resolution similarity
(root cause + fix), the specific checks of :mod:`gateway_plugins.gim.agreement` and the opposite-swap veto, the
mechanism check's overlap and action agreement (:mod:`gateway_plugins.gim.mechanism`) and the same-move path
(:mod:`gateway_plugins.gim.moves`, with the checks on), with an explanation vocabulary of what the
gateway would hold (the distractors and the clusters' first reports). Lexical (BM25) evidence depends on the
whole memory and is left out, so error evidence here is the dense part only (a lower bound of what the gateway
sees).

It prints, for a grid of resolution thresholds and of the mechanism check's ``min_overlap``, the share of
duplicates and of hard-negative pairs that would merge, each with a 95 % Wilson interval; ``--pairs`` lists every
case's scores and conflicts. It never starts a gateway: the figures to report come from ``bench/gim_eval.py``; this
script is for choosing the parameters on the calibration part only.

    python bench/gim_dedup_calibrate.py [--split calib] [--eval-dir bench/data/gim_dedup] [--pairs]
        [--hard-negative-fix protocol|own] [--error-thresholds 0.35] [--overlaps 0,0.2,0.25,0.3] [--timing]

``--timing`` measures what the mechanism check adds under the dedup lock for one candidate master: deriving the
terms of the master's stored texts and comparing them with the submission's (mean and p95 over every case, in
microseconds), and what it adds before the lock: the submission's explanation terms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.gim_eval import EvalSet, distractor_submission, hard_negative_submission, report_submission, wilson
from gateway_plugins.gim.agreement import conflicts
from gateway_plugins.gim.evidence import Facts, extract_facts
from gateway_plugins.gim.mechanism import ReportTerms, mechanism_conflict, move_conflict, report_terms
from gateway_plugins.gim.models import FixBundle
from gateway_plugins.gim.moves import same_move
from gateway_plugins.gim.signatures import normalise_error
from gateway_plugins.gim.texts import error_text, resolution_text
from gateway_plugins.gim.vocabulary import ExplanationVocabulary, explanation_terms


@dataclass
class Case:
    """One submission compared with the master it would join (merge wanted for duplicates, not for pairs)."""

    label: str
    duplicate: bool
    error: float
    resolution: float
    conflicts: list[str]
    sub_terms: ReportTerms
    master_terms: list[ReportTerms]

    def mechanism(self, vocabulary: ExplanationVocabulary, min_overlap: float) -> str | None:
        found = mechanism_conflict(self.sub_terms, self.master_terms, vocabulary, min_overlap=min_overlap)
        return None if found is None else str(found)


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
    items = [report_terms(own[0][0], resolution_text(own[0][1], own[0][2]), own[0][2])]
    items += [report_terms(e, resolution_text(r, f)) for e, r, f in own[1:]]  # children: texts only, no actions
    sub_terms = report_terms(error, resolution_text(root_cause, fix), fix)
    if (swapped := move_conflict(sub_terms, items[0])) is not None:
        found.append(swapped)
    return Case(label, duplicate, dense, resolution, [str(c) for c in found], sub_terms, items)


def memory_vocabulary(data: EvalSet) -> ExplanationVocabulary:
    """The explanation vocabulary of the memory the duplicate submissions meet in a ``gim_eval`` run: the
    distractors and the clusters' first reports (later submissions add to it there, not here)."""
    vocabulary = ExplanationVocabulary()
    subs = [distractor_submission(d) for d in data.distractors]
    subs += [report_submission(c, c["reports"][0], c["root_cause"]) for c in data.clusters]
    for submission in subs:
        _, root_cause, fix = _prepared(submission)
        vocabulary.add(explanation_terms(resolution_text(root_cause, fix)))
    return vocabulary


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


def print_timing(data: EvalSet, vocabulary: ExplanationVocabulary, min_overlap: float, *, own_fix: bool) -> None:
    """Time the mechanism check's work per candidate, from the texts the pack reads under the lock."""
    clusters = data.by_id
    cases = []
    for pair in data.hard_negatives:
        sub = _prepared(hard_negative_submission(pair["b"], clusters, own_fix=own_fix))
        master = _prepared(hard_negative_submission(pair["a"], clusters, own_fix=own_fix))
        cases.append((sub, master))
    for cluster in data.clusters:
        first = _prepared(report_submission(cluster, cluster["reports"][0], cluster["root_cause"]))
        for report in cluster["reports"][1:]:
            cases.append((_prepared(report_submission(cluster, report, cluster["root_cause_paraphrases"][0])), first))
    before, under = [], []
    for (error, root_cause, fix), (m_error, m_root_cause, m_fix) in cases * 5:
        started = time.perf_counter()
        explanation = explanation_terms(resolution_text(root_cause, fix))
        before.append(time.perf_counter() - started)
        resolution = resolution_text(m_root_cause, m_fix)
        started = time.perf_counter()
        mine = report_terms(error, "", fix, explanation=explanation)
        theirs = report_terms(m_error, resolution, m_fix)
        mechanism_conflict(mine, [theirs], vocabulary, min_overlap=min_overlap)
        under.append(time.perf_counter() - started)
    for label, values in (("before the lock (submission terms)", before), ("under the lock, per candidate", under)):
        values.sort()
        p95 = values[int(0.95 * (len(values) - 1))]
        print(f"{label}: mean {statistics.fmean(values) * 1e6:.0f} us, p95 {p95 * 1e6:.0f} us ({len(values)} runs)")


def _share(values: list[bool]) -> str:
    k, n = sum(values), len(values)
    low, high = wilson(k, n)
    return f"{k / n:.3f} ({k}/{n}; {low:.3f}-{high:.3f})" if n else "n/a"


def print_sweep(
    cases: list[Case],
    vocabulary: ExplanationVocabulary,
    error_threshold: float,
    thresholds: list[float],
    overlaps: list[float],
) -> None:
    dups = [c for c in cases if c.duplicate]
    pairs = [c for c in cases if not c.duplicate]
    print(f"\nerror threshold {error_threshold} (dense only); duplicates {len(dups)}, hard-negative pairs {len(pairs)}")
    print(f"{'resolution':>10}  {'checks':<22}  {'dups merged':<26}  false merges")
    for t in thresholds:
        for label, specific, overlap in [("none", False, 0.0)] + [(f"specific+mech {o}", True, o) for o in overlaps]:

            def merges(c: Case, t: float = t, specific: bool = specific, overlap: float = overlap) -> bool:
                # the same-move path stands in for rule 2 when the agreement checks are on
                moved = specific and same_move(c.sub_terms.moves, c.master_terms[0].moves)
                if c.error < error_threshold or (c.resolution < t and not moved):
                    return False
                return not (specific and (c.conflicts or c.mechanism(vocabulary, overlap)))

            cells = [_share([merges(c) for c in group]) for group in (dups, pairs)]
            print(f"{t:>10.2f}  {label:<22}  {cells[0]:<26}  {cells[1]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--eval-dir", default=str(Path(__file__).resolve().parent / "data" / "gim_dedup"))
    parser.add_argument("--split", default="calib")
    parser.add_argument("--error-thresholds", default="0.35", help="comma-separated")
    parser.add_argument("--resolution-thresholds", default="0.70,0.72,0.74,0.77", help="comma-separated")
    parser.add_argument("--overlaps", default="0,0.2,0.25,0.3", help="mechanism min_overlap values, comma-separated")
    parser.add_argument("--distractors", default="/work/shared/eval/distractors_dev.jsonl")
    parser.add_argument("--hard-negative-fix", choices=["own", "protocol"], default="protocol")
    parser.add_argument("--pairs", action="store_true", help="list every case's scores and conflicts")
    parser.add_argument("--timing", action="store_true", help="time the mechanism check's work, then stop")
    args = parser.parse_args()
    data = EvalSet.read(Path(args.eval_dir), args.split, Path(args.distractors) if args.distractors else None)
    vocabulary = memory_vocabulary(data)
    if args.timing:
        print_timing(data, vocabulary, 0.45, own_fix=args.hard_negative_fix == "own")
        return
    cases = build_cases(data, Embedder(), own_fix=args.hard_negative_fix == "own")
    overlaps = [float(o) for o in args.overlaps.split(",")]
    if args.pairs:
        for c in cases:
            kind = "dup " if c.duplicate else "pair"
            found = [*c.conflicts, *filter(None, [c.mechanism(vocabulary, max(overlaps))])]
            print(f"{kind} {c.label:<48} error {c.error:.3f}  resolution {c.resolution:.3f}  {'; '.join(found)}")
    resolutions = [float(t) for t in args.resolution_thresholds.split(",")]
    for error_threshold in (float(t) for t in args.error_thresholds.split(",")):
        print_sweep(cases, vocabulary, error_threshold, resolutions, overlaps)


if __name__ == "__main__":
    main()
