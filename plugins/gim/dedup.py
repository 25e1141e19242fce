"""The duplicate decision: does a submission describe the root cause of an existing master?

Hybrid rule (all three must hold for a candidate master; the best-scoring such master wins):

1. **Same failure** — error evidence ``max(dense, lexical) >= dedup_error_threshold``: the cosine similarity of
   the normalised error signatures (best item of the master), or the BM25 score of the submission's signature
   tokens against the master's items divided by the best possible score. Either can carry it: dense similarity
   sees through rewording, BM25 sees through a stack trace around a short, identical exception line.
2. **Same cause and fix** — the *resolution* vectors (root cause + fix) agree:
   ``cosine >= dedup_resolution_threshold``. Look-alike errors with different causes (an SDK too old vs too
   new, a removed constant in two unrelated libraries) fail here; two reports of one cause in other words pass.
3. Optionally (``require_same_exception_type``, off by default) **compatible exception types**: the
   submission's exception type is among the master's, or one side has none or only a warning. Off by default
   because real reports of one cause raise different types (ESM ``SyntaxError`` vs CommonJS ``TypeError`` for
   one missing export; a ``UserWarning`` then a ``RuntimeError``): on the development split the rule cost merges
   and prevented no false merge, since rule 2 already separates look-alikes.

Baseline rule (the public GIM algorithm): merge into the master of the closest combined vector when its cosine
similarity is at least ``duplicate_threshold`` (0.85).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["Evidence", "decide_baseline", "decide_hybrid", "gather_evidence"]


@dataclass
class Evidence:
    """What one candidate master has in common with a submission."""

    master_id: str
    error_dense: float = 0.0
    lexical: float = 0.0
    resolution: float = 0.0
    exception_types: frozenset[str | None] = frozenset()

    @property
    def error(self) -> float:
        return max(self.error_dense, min(self.lexical, 1.0))

    def compatible(self, exception_type: str | None) -> bool:
        known = {t for t in self.exception_types if t is not None and not t.endswith("Warning")}
        if exception_type is None or exception_type.endswith("Warning") or len(known) < len(self.exception_types):
            return True
        return not known or exception_type in known


def gather_evidence(
    *,
    error_hits: Iterable[tuple[str, float]],
    lexical_hits: Iterable[tuple[str, float]],
    resolution_hits: Iterable[tuple[str, float]],
    is_active: Callable[[str], bool],
    exception_types: Mapping[str, Iterable[str | None]] | None = None,
) -> dict[str, Evidence]:
    """Best score per master and signal; hits are ``(master_id, score)``. Masters that are not active (a vector
    left by a crashed writer, not yet reconciled) are dropped."""
    evidence: dict[str, Evidence] = {}

    def entry(master_id: str) -> Evidence:
        return evidence.setdefault(master_id, Evidence(master_id))

    for master_id, score in error_hits:
        e = entry(master_id)
        e.error_dense = max(e.error_dense, score)
    for master_id, score in lexical_hits:
        e = entry(master_id)
        e.lexical = max(e.lexical, score)
    for master_id, score in resolution_hits:
        if master_id in evidence:
            e = evidence[master_id]
            e.resolution = max(e.resolution, score)
    for master_id in list(evidence):
        if not is_active(master_id):
            del evidence[master_id]
        elif exception_types is not None:
            evidence[master_id].exception_types = frozenset(exception_types.get(master_id, ()))
    return evidence


def decide_hybrid(
    evidence: Mapping[str, Evidence],
    *,
    exception_type: str | None,
    error_threshold: float,
    resolution_threshold: float,
    require_same_exception_type: bool = False,
) -> Evidence | None:
    """The master to merge into, or ``None`` for a new master."""
    eligible = [
        e
        for e in evidence.values()
        if e.error >= error_threshold
        and e.resolution >= resolution_threshold
        and (not require_same_exception_type or e.compatible(exception_type))
    ]
    if not eligible:
        return None
    return max(eligible, key=lambda e: (e.error + e.resolution, e.master_id))


def decide_baseline(best: tuple[str, float] | None, *, threshold: float) -> str | None:
    """``best`` is the closest combined vector's ``(master_id, cosine)``."""
    if best is None or best[1] < threshold:
        return None
    return best[0]
