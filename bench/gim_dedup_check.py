"""Checks a part of the duplicate-decision set (``bench/data/gim_dedup``) before it is used.

1. Its error families appear in no other part of the set (``family`` of clusters and pairs; a pair side's
   ``cluster_id`` must name a cluster of the same part), and its cluster ids are new too.
2. Every submission ``bench/gim_eval.py`` would send for it — clusters' reports (with the paraphrased root causes and
   the reworded fix of the third duplicate) and both sides of every pair, under both ``--hard-negative-fix`` modes —
   validates against the tool's input model (``SubmitIssueInput``).
3. Notes (not failures) the families whose first word is a library named by a framework of the shared development
   split, which carries no ``family`` field: a family is an error family, not a library (the dev split's OpenCV
   ``libGL`` cluster and ``holdout5``'s OpenCV GUI family share a library), so these are checked by hand.

    ./dev python bench/gim_dedup_check.py --split holdout6
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.gim_eval import EvalSet, hard_negative_submission, load, report_submission
from gateway_plugins.gim.schemas import SubmitIssueInput

GENERIC = {"python", "node", "docker", "nvidia", "other"}
DATA = Path(__file__).resolve().parent / "data" / "gim_dedup"


def families(split: str) -> set[str]:
    data = EvalSet.read(DATA, split)
    return {c["family"] for c in data.clusters} | {p["family"] for p in data.hard_negatives}


def submissions(data: EvalSet) -> list[dict[str, Any]]:
    out = []
    for cluster in data.clusters:
        out.append(report_submission(cluster, cluster["reports"][0], cluster["root_cause"]))
        for i, report in enumerate(cluster["reports"][1:], start=1):
            fix = cluster.get("fix_paraphrase") if i == 3 else None
            out.append(report_submission(cluster, report, cluster["root_cause_paraphrases"][(i - 1) % 2], fix))
    for own in (True, False):
        for pair in data.hard_negatives:
            for side in (pair["a"], pair["b"]):
                out.append(hard_negative_submission(side, data.by_id, own_fix=own))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", required=True)
    parser.add_argument("--dev", default="/work/shared/eval")
    args = parser.parse_args()
    problems: list[str] = []
    mine = families(args.split)
    others = sorted(p.name[len("errors_") : -len(".jsonl")] for p in DATA.glob("errors_*.jsonl"))
    for other in others:
        if other != args.split and (shared := mine & families(other)):
            problems.append(f"families shared with {other}: {sorted(shared)}")
    data = EvalSet.read(DATA, args.split)
    ids = {c["cluster_id"] for c in data.clusters}
    for other in others:
        if other != args.split and (shared := ids & {c["cluster_id"] for c in EvalSet.read(DATA, other).clusters}):
            problems.append(f"cluster ids shared with {other}: {sorted(shared)}")
    for pair in data.hard_negatives:
        for side in (pair["a"], pair["b"]):
            if side.get("cluster_id") and side["cluster_id"] not in ids:
                problems.append(f"{pair['pair_id']}: unknown cluster {side['cluster_id']}")
    dev = Path(args.dev)
    frameworks = [c["framework"] for c in load(dev / "errors_dev.jsonl")]
    frameworks += [p[s]["framework"] for p in load(dev / "hard_negatives_dev.jsonl") for s in ("a", "b")]
    words = {w for f in frameworks for w in re.findall(r"[a-z0-9]+", f.lower()) if len(w) > 2} - GENERIC
    notes = [f"family {f} names a dev-split framework's library" for f in sorted(mine) if f.split("-")[0] in words]
    sent = submissions(data)
    for n, submission in enumerate(sent):
        try:
            SubmitIssueInput.model_validate(submission)
        except ValueError as exc:  # pydantic's ValidationError
            problems.append(f"submission {n}: {exc}")
    print(
        f"{args.split}: {len(data.clusters)} clusters, {len(data.hard_negatives)} pairs, {len(mine)} families, "
        f"{len(sent)} submissions validated"
    )
    for note in notes:
        print("note:", note)
    for problem in problems:
        print("PROBLEM:", problem)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
