"""The duplicate decision: does a submission describe the root cause of an existing master?

Hybrid rule (all must hold for a candidate master; the best-scoring such master wins):

1. **Same failure** — error evidence ``max(dense, lexical) >= dedup_error_threshold``: the cosine similarity of
   the normalised error signatures (best item of the master), or the BM25 score of the submission's signature
   tokens against the master's items divided by the best possible score. Either can carry it: dense similarity
   sees through rewording, BM25 sees through a stack trace around a short, identical exception line.
2. **Same cause and fix** — the *resolution* vectors (root cause + fix) agree:
   ``cosine >= dedup_resolution_threshold``. Look-alike errors with different causes (an SDK too old vs too
   new, a removed constant in two unrelated libraries) mostly fail here; two reports of one cause in other
   words pass.
3. **No contradiction** (``dedup_require_agreement``, on by default) — the specific evidence of the submission
   and of the master (:mod:`gateway_plugins.gim.evidence`: the values in the failure line, the libraries the
   trace passes through, the packages the cause and fix are about and the direction the fix moves them) does
   not contradict (:mod:`gateway_plugins.gim.agreement`), neither fix removes a distribution that the other
   installs (an opposite swap: :func:`gateway_plugins.gim.mechanism.move_conflict`), and the two explanations
   describe the same mechanism
   (:mod:`gateway_plugins.gim.mechanism`): what they add beyond the error texts overlaps by at least
   ``dedup_mechanism_overlap`` (IDF-weighted over the stored explanations), or their fixes' actions agree (act
   on something in common: the same tool alone is not the same action, nor shared words for a package that one
   fix moves up and the other down, or keeps below a version while the other installs it).
   Embeddings blur exactly these details and weigh most the words look-alike explanations share with their error,
   so rules 1-2 alone merged a fifth of unseen look-alike pairs; each contradiction is a veto, and none can cause
   a merge.
**Second path** (``dedup_second_path``, with ``dedup_require_agreement``): reports of one cause seen from
different layers of a stack (a tool's own message, a wrapper's traceback, a CI log line) can read less alike than
rule 1 asks, and their explanations a little less alike than rule 2 asks. A candidate that misses rules 1-2 may
still merge when its error evidence reaches ``dedup_second_path_error``, its resolution similarity
``dedup_second_path_resolution``, and the two explanations' distinguishing terms (the mechanism check's overlap,
:mod:`gateway_plugins.gim.mechanism`, without its exemption for agreeing actions) overlap by at least
``dedup_second_path_overlap``: strong agreement on what the explanations add beyond the error compensates for a
weaker error similarity. Every veto of rule 3 still applies.

**Same-move path** (``dedup_same_move_path``, with ``dedup_require_agreement``): a reworded duplicate's fix is often
the same move written with another tool or spelling (``pip install -U "black>=22.3.0"`` and ``poetry add --group
dev "black@^22.3"``); its explanation in other words can then read less alike than rule 2 asks although the fix is
plainly the same. A candidate that passes rule 1 merges when the two fixes make the same specific move of one
package (:func:`gateway_plugins.gim.moves.same_move`: an upgrade, a downgrade or a pin of the same distribution,
the same way, to versions that intersect; a plain install or removal does not count, nor an installer upgrading
itself) — structural evidence of the same fix standing in for rule 2's similarity. Every veto of rule 3 still
applies (an upgrade against a downgrade is the direction veto).

4. Optionally (``require_same_exception_type``, off by default) **compatible exception types**: the
   submission's exception type is among the master's, or one side has none or only a warning. Off by default
   because real reports of one cause raise different types (ESM ``SyntaxError`` vs CommonJS ``TypeError`` for
   one missing export; a ``UserWarning`` then a ``RuntimeError``): on the development split the rule cost merges
   and prevented no false merge, since rule 2 already separates look-alikes.

Baseline rule (the public GIM algorithm): merge into the master of the closest combined vector when its cosine
similarity is at least ``duplicate_threshold`` (0.85).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from gateway_plugins.gim.agreement import Conflict

__all__ = ["Evidence", "Hit", "SecondPath", "decide_baseline", "decide_hybrid", "gather_evidence"]

Hit = tuple[str, float] | tuple[str, float, str]
"""``(master_id, score)``, or ``(master_id, score, item_id)`` naming the item of the master that matched."""


@dataclass
class Evidence:
    """What one candidate master has in common with a submission."""

    master_id: str
    error_dense: float = 0.0
    lexical: float = 0.0
    resolution: float = 0.0
    exception_types: frozenset[str | None] = frozenset()
    item_ids: set[str] = field(default_factory=set)
    """The master's items whose error matched the submission's (dense or lexical)."""
    conflicts: tuple[Conflict, ...] = ()
    """Contradictions found between the submission's and the master's evidence (rule 3): any one is a veto."""
    overlap: float = 0.0
    """The mechanism check's best overlap with the master's items (filled with the conflicts; the second path)."""
    same_move: bool = False
    """Whether the two fixes make the same move of one package (filled with the conflicts; the same-move path)."""

    def passes(self, error_threshold: float, resolution_threshold: float) -> bool:
        """Rules 1 and 2."""
        return self.error >= error_threshold and self.resolution >= resolution_threshold

    @property
    def error(self) -> float:
        return max(self.error_dense, min(self.lexical, 1.0))

    def compatible(self, exception_type: str | None) -> bool:
        known = {t for t in self.exception_types if t is not None and not t.endswith("Warning")}
        if exception_type is None or exception_type.endswith("Warning") or len(known) < len(self.exception_types):
            return True
        return not known or exception_type in known


@dataclass(frozen=True)
class SecondPath:
    """The second merge path (see the module): weaker error and resolution evidence, strong explanation overlap."""

    error_threshold: float
    resolution_threshold: float
    min_overlap: float

    def admits(self, evidence: Evidence) -> bool:
        """Whether the candidate may merge by this path, if its explanations agree strongly enough."""
        return evidence.passes(self.error_threshold, self.resolution_threshold)

    def merges(self, evidence: Evidence) -> bool:
        return self.admits(evidence) and evidence.overlap >= self.min_overlap


def gather_evidence(
    *,
    error_hits: Iterable[Hit],
    lexical_hits: Iterable[Hit],
    resolution_hits: Iterable[Hit],
    is_active: Callable[[str], bool],
    exception_types: Mapping[str, Iterable[str | None]] | None = None,
) -> dict[str, Evidence]:
    """Best score per master and signal, and the items whose error matched. Masters that are not active (a vector
    left by a crashed writer, not yet reconciled) are dropped."""
    evidence: dict[str, Evidence] = {}

    def entry(master_id: str) -> Evidence:
        return evidence.setdefault(master_id, Evidence(master_id))

    for master_id, score, *item in error_hits:
        e = entry(master_id)
        e.error_dense = max(e.error_dense, score)
        e.item_ids.update(item)
    for master_id, score, *item in lexical_hits:
        e = entry(master_id)
        e.lexical = max(e.lexical, score)
        e.item_ids.update(item)
    for master_id, score, *_ in resolution_hits:
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
    second_path: SecondPath | None = None,
    same_move_path: bool = False,
) -> Evidence | None:
    """The master to merge into, or ``None`` for a new master. ``second_path``: the second merge path (its
    candidates' ``overlap`` filled), or ``None`` for rules 1-2 only; ``same_move_path``: whether a candidate that
    passes rule 1 and whose fix makes the same move (``same_move`` filled) may merge without rule 2."""
    eligible = [
        e
        for e in evidence.values()
        if (
            e.passes(error_threshold, resolution_threshold)
            or (second_path is not None and second_path.merges(e))
            or (same_move_path and e.same_move and e.error >= error_threshold)
        )
        and not e.conflicts
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
