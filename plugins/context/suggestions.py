"""``GET /search/suggestions``: completions of a partial query from what the caller's connectors indexed: symbol
names (``Invoice.total``, ``charge_card``), section titles of documents, file paths, and the keys and titles of
hosted documents (``PROJ-7``, "Checkout fails for expired cards").

A tenant's vocabulary is built from the in-memory search index when first asked and kept until the index changes
(a few tenants at a time). Matching is case-insensitive, with ``_``, ``-`` and spaces alike: first the entries that
start with ``q``, then those with a part (``.``, ``/``, ``:`` or ``#`` separated) that starts with it, then, when
that leaves room, fuzzy matches (RapidFuzz's partial ratio against entries at least as long as ``q``) so a typo
still finds ``charge_card``. Within a group, shorter entries come first.
"""

from __future__ import annotations

import asyncio
import bisect
import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rapidfuzz import fuzz, process

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

__all__ = ["Vocabulary", "suggest"]

_PARTS = re.compile(r"[./:#\\]+")
_SEPARATORS = re.compile(r"[\s_\-]+")
_FUZZY_CUTOFF = 80.0
_CACHED = 8


def normalise(text: str) -> str:
    return _SEPARATORS.sub(" ", text.lower()).strip()


@dataclass(frozen=True)
class Vocabulary:
    """Distinct suggestion texts with sorted lookup keys (the whole text and each of its parts, normalised)."""

    texts: list[str]
    normalised: list[str]
    keys: list[tuple[str, int, int]]
    """(key, 0 for the whole text or 1 for a part, text number), sorted."""

    @classmethod
    def of(cls, entries: list[str]) -> Vocabulary:
        texts = sorted(set(entries), key=lambda t: (len(t), t))
        normalised = [normalise(t) for t in texts]
        keys = []
        for number, norm in enumerate(normalised):
            keys.append((norm, 0, number))
            parts = [normalise(p) for p in _PARTS.split(texts[number]) if p]
            keys.extend((part, 1, number) for part in dict.fromkeys(parts) if part and part != norm)
        keys.sort()
        return cls(texts, normalised, keys)

    def match(self, q: str, limit: int) -> list[str]:
        wanted = normalise(q)
        if not wanted:
            return []
        found: dict[int, tuple[int, int]] = {}  # text number -> (group, order)
        start = bisect.bisect_left(self.keys, (wanted,))
        for key, group, number in self.keys[start:]:
            if not key.startswith(wanted):
                break
            best = found.get(number)
            if best is None or group < best[0]:
                found[number] = (group, number)
        ranked = sorted(found, key=lambda number: found[number])[:limit]
        if len(ranked) < limit and len(wanted) >= 3:
            # A completion is at least as long as what was typed: a shorter entry inside the query is no suggestion.
            longer = {n: norm for n, norm in enumerate(self.normalised) if len(norm) >= len(wanted) and n not in found}
            fuzzy = process.extract(
                wanted, longer, scorer=fuzz.partial_ratio, limit=limit * 3, score_cutoff=_FUZZY_CUTOFF
            )
            for _, _, number in sorted(fuzzy, key=lambda hit: (-hit[1], hit[2])):
                if number not in found and len(ranked) < limit:
                    found[number] = (2, number)
                    ranked.append(number)
        return [self.texts[number] for number in ranked]


def _entries(service: ContextService, connector_ids: frozenset[str]) -> list[str]:
    """Paths and symbols of the live files of ``connector_ids``; of a hosted document only its key (``PROJ-7``),
    the first chunk's symbol (the others are section headings such as "Comment by ada on 2025-01-02")."""
    assert service.live is not None
    index = service.live.index
    entries: list[str] = []
    for entry in index.live_files(connector_ids):
        entries.append(entry.path)
        rows = entry.rows if entry.source_type == "file" else entry.rows[:1]
        entries.extend(index.chunks[row].symbol or "" for row in rows)
    return [text for text in entries if text]


async def suggest(service: ContextService, tenant: str, q: str, limit: int) -> list[str]:
    """Up to ``limit`` completions of ``q`` from ``tenant``'s indexed symbols, titles and paths."""
    assert service.live is not None
    await service.live.catch_up(max_age=service.config.refresh_seconds)
    connectors = frozenset(c["id"] for c in await service.repo.list_connectors(service.store, tenant))
    key = (connectors, service.live.index.version)
    cache: OrderedDict = service.suggestion_cache
    vocabulary = cache.get(key)
    if vocabulary is None:  # read on the loop (the index changes there), sorted on a thread
        entries = _entries(service, connectors) + await service.repo.document_titles(service.store, sorted(connectors))
        vocabulary = cache[key] = await asyncio.to_thread(Vocabulary.of, entries)
        while len(cache) > _CACHED:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return vocabulary.match(q, limit)
