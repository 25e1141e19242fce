"""Search ranking: fuse the retrieval signals per item, keep the best item per master, boost, weigh by confidence.

Hybrid relevance of an item is ``(1 - w) * dense + w * lexical`` where ``dense`` is the cosine similarity of the
query's error signature with the item's, ``lexical`` the BM25 score over the signatures' tokens divided by the
query's best possible score (clipped to 1), and ``w`` the configured ``lexical_weight``. An item that only one
signal retrieved scores 0 for the other (conservative: it is not promoted on a guess). A master's relevance is
its best item's (children lead to their master). The most relevant masters (as many as the search's pool, see
:mod:`gateway_plugins.gim.search`) are then re-scored: those whose environment matches the caller's (language,
framework, OS, provider, model) get ``1 + boost`` per match, and the ranking key is relevance x boost x
confidence: the system design's "similarity x confidence", so confirmed fixes rise above unconfirmed ones of equal
relevance.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gateway_plugins.gim.lexical import LexicalHit

__all__ = ["Ranked", "SearchRow", "environment_matches", "fuse", "normalise_env_value", "rank", "shortlist"]


@dataclass(frozen=True)
class SearchRow:
    """The columns of a master a search ranks by and shows (read by ``Repository.search_rows``)."""

    canonical_title: str
    root_cause_category: str
    confidence_score: float
    verification_count: int
    last_confirmed_at: datetime | None
    affected_models: list[dict[str, Any]]
    environments: dict[str, list[str]]


@dataclass
class _Best:
    relevance: float = 0.0
    item_id: str = ""
    dense: float = 0.0
    """The best dense similarity among the master's items (the threshold applies to it or to the relevance)."""


@dataclass(frozen=True)
class Ranked:
    master_id: str
    relevance: float
    """The fused similarity (0-1), reported as ``relevance_score``."""
    key: float
    """relevance x environment boost x confidence: the sort key."""
    matched_item: str = field(default="", compare=False)


def fuse(
    dense: Iterable[tuple[str, str, float]], lexical: Iterable[LexicalHit], *, lexical_weight: float
) -> dict[str, _Best]:
    """Per master, the best fused item relevance. ``dense`` yields ``(item_id, master_id, cosine)``."""
    per_item: dict[str, list[float]] = {}
    masters: dict[str, str] = {}
    for item_id, master_id, score in dense:
        entry = per_item.setdefault(item_id, [0.0, 0.0])
        entry[0] = max(entry[0], score)
        masters[item_id] = master_id
    for hit in lexical:
        entry = per_item.setdefault(hit.item_id, [0.0, 0.0])
        entry[1] = max(entry[1], min(hit.score, 1.0))
        masters[hit.item_id] = hit.master_id
    best: dict[str, _Best] = {}
    for item_id, (dense_score, lexical_score) in per_item.items():
        relevance = (1.0 - lexical_weight) * dense_score + lexical_weight * lexical_score
        current = best.setdefault(masters[item_id], _Best())
        current.dense = max(current.dense, dense_score)
        if relevance > current.relevance:
            current.relevance, current.item_id = relevance, item_id
    return best


_WORD = re.compile(r"[a-z0-9]+")


def normalise_env_value(value: str | None) -> frozenset[str]:
    """The words of an environment value (``"PyTorch / NVIDIA driver"`` -> ``{pytorch, nvidia, driver}``)."""
    return frozenset(w for w in _WORD.findall((value or "").lower()) if len(w) > 1)


def environment_matches(environments: Mapping[str, Sequence[str]], query: Mapping[str, str | None]) -> int:
    """How many of the query's environment attributes the master has seen (a shared word is a match)."""
    matches = 0
    for key, wanted in query.items():
        words = normalise_env_value(wanted)
        if not words:
            continue
        if any(words & normalise_env_value(seen) for seen in environments.get(key, ())):
            matches += 1
    return matches


def shortlist(
    candidates: Mapping[str, _Best], *, threshold: float, is_active: Callable[[str], bool], size: int
) -> tuple[dict[str, _Best], int]:
    """The ``size`` most relevant active masters whose relevance or dense similarity reaches ``threshold`` (the
    ones re-scored with confidence: the spec's oversampling), and how many masters qualify in all."""
    qualified = [
        (master_id, best)
        for master_id, best in candidates.items()
        if max(best.relevance, best.dense) >= threshold and is_active(master_id)
    ]
    qualified.sort(key=lambda pair: (-pair[1].relevance, pair[0]))
    return dict(qualified[:size]), len(qualified)


def rank(
    candidates: Mapping[str, _Best],
    *,
    confidence: Mapping[str, float],
    boosts: Mapping[str, int],
    boost: float,
    use_confidence: bool,
) -> list[Ranked]:
    """The shortlisted masters best first (ties broken by id, so pages are stable)."""
    ranked = []
    for master_id, best in candidates.items():
        if master_id not in confidence:
            continue
        key = best.relevance * (1.0 + boost * boosts.get(master_id, 0))
        if use_confidence:
            key *= confidence[master_id]
        ranked.append(Ranked(master_id, best.relevance, key, best.item_id))
    ranked.sort(key=lambda r: (-r.key, r.master_id))
    return ranked
