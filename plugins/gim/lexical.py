"""An in-memory BM25 index over the normalised error signatures of every active item.

Why in memory rather than SQLite FTS5 / PostgreSQL ``tsvector``: ranking must be the same whichever relational
store is configured, and ``ts_rank`` has no inverse document frequency, which is what makes a rare identifier
(``PILLOW_VERSION``, ``proxies``) outweigh ``Error``. The tokens of each item are stored with the item in the
relational store (``gim_items.tokens``), so the index is rebuilt at start-up from that table and follows new items
incrementally through their activation sequence (``index_seq``), including items other processes activated.

Postings are compact arrays (document number, term frequency); a query costs one vectorised update per distinct
query term, so 100k items answer in a few milliseconds. A query of thousands of terms costs more, so the pack scores
it in slices (:meth:`LexicalIndex.search_sliced`), and other requests run in between. Document numbers are stored as
numpy's native index type (``intp``): numpy indexes with them directly, where 32-bit numbers would be converted on
every use (measured at 100k items: twice the time of a query).
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import Generator, Iterable, Sequence
from dataclasses import dataclass

import anyio.lowlevel
import numpy as np

__all__ = ["LexicalHit", "LexicalIndex"]

_DOC_TYPE = "q" if np.dtype(np.intp).itemsize == 8 else "i"
"""The :mod:`array` type code of ``numpy.intp``."""

SLICE_SECONDS = 0.005
"""How long :meth:`LexicalIndex.search_sliced` scores before letting other tasks run."""
_TERMS_PER_CLOCK_CHECK = 32


@dataclass(frozen=True)
class LexicalHit:
    item_id: str
    master_id: str
    score: float
    """BM25 score divided by the score of an average-length item holding every query term once (the sum of the
    terms' idf): about 1 for an item that shares the query's vocabulary, more for repeated terms in short items."""


class _Postings:
    __slots__ = ("docs", "tfs")

    def __init__(self) -> None:
        self.docs = array(_DOC_TYPE)
        self.tfs = array("f")


class LexicalIndex:
    """BM25 (``k1``, ``b``) over token lists; documents are items, hits carry their master id."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75, common_term_ratio: float = 0.5) -> None:
        self.k1 = k1
        self.b = b
        self.common_term_ratio = common_term_ratio
        self._postings: dict[str, _Postings] = {}
        self._item_ids: list[str] = []
        self._master_ids: list[str] = []
        self._row: dict[str, int] = {}
        self._lengths = array("f")
        self._alive = array("f")  # 1.0 or 0.0: a factor of the scores
        self._total_length = 0.0
        self._live = 0
        self.last_seq = 0
        """Highest activation sequence number loaded (see :meth:`add`)."""
        self.version = 0
        """Changes whenever an item is added or removed: a search result stays current while it is unchanged."""

    def __len__(self) -> int:
        return self._live

    def __contains__(self, item_id: object) -> bool:
        row = self._row.get(item_id)  # type: ignore[call-overload]
        return row is not None and bool(self._alive[row])

    def add(self, item_id: str, master_id: str, tokens: Sequence[str], *, seq: int | None = None) -> None:
        """Index an item (a repeat of a known id is ignored)."""
        if seq is not None and seq > self.last_seq:
            self.last_seq = seq
        if item_id in self._row:
            return
        row = len(self._item_ids)
        self._row[item_id] = row
        self._item_ids.append(item_id)
        self._master_ids.append(master_id)
        self._lengths.append(float(len(tokens)))
        self._alive.append(1.0)
        self._total_length += len(tokens)
        self._live += 1
        self.version += 1
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for token, count in counts.items():
            postings = self._postings.get(token)
            if postings is None:
                postings = self._postings[token] = _Postings()
            postings.docs.append(row)
            postings.tfs.append(float(count))

    def add_many(self, rows: Iterable[tuple[str, str, Sequence[str], int | None]]) -> None:
        for item_id, master_id, tokens, seq in rows:
            self.add(item_id, master_id, tokens, seq=seq)

    def remove(self, item_id: str) -> None:
        """Forget an item (its postings stay as tombstones and never score)."""
        row = self._row.get(item_id)
        if row is None or not self._alive[row]:
            return
        self._alive[row] = 0.0
        self._live -= 1
        self.version += 1
        self._total_length -= self._lengths[row]

    def _idf(self, df: int, n: int) -> float:
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def search(self, tokens: Sequence[str], *, limit: int) -> list[LexicalHit]:
        """The ``limit`` best items for a bag of query tokens, best first."""
        steps = self._scoring(tokens, limit=limit)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    async def search_sliced(self, tokens: Sequence[str], *, limit: int) -> list[LexicalHit]:
        """:meth:`search`, handing the event loop back after every few milliseconds of scoring.

        A query of thousands of known terms costs tens of milliseconds at 100k items (one vectorised update per
        term); other requests run between the slices. The result is the search over the items indexed when it
        began (items added meanwhile are left out), so a search on its own returns exactly what :meth:`search`
        returns.
        """
        steps = self._scoring(tokens, limit=limit)
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            await anyio.lowlevel.checkpoint()

    def _scoring(self, tokens: Sequence[str], *, limit: int) -> Generator[None, None, list[LexicalHit]]:
        """The search as a generator that yields whenever :data:`SLICE_SECONDS` of scoring have passed.

        Nothing refers to the index's arrays while it is suspended (a numpy view would stop :meth:`add` from
        growing them): each term's postings are viewed only inside :meth:`_score_term`.
        """
        n = len(self._item_ids)
        if not n or not tokens or not self._live:
            return []
        query = dict.fromkeys(tokens)
        live = self._live
        avg = max(self._total_length / live, 1.0)
        norm = self.k1 * (1.0 - self.b + self.b * np.frombuffer(self._lengths, dtype=np.float32)[:n] / avg)
        scores = np.zeros(n, dtype=np.float32)
        best = 0.0
        since = time.perf_counter()
        for number, token in enumerate(query, start=1):
            if not number % _TERMS_PER_CLOCK_CHECK and time.perf_counter() - since > SLICE_SECONDS:
                yield
                since = time.perf_counter()
            postings = self._postings.get(token)
            if postings is not None:
                best += self._score_term(postings, n, live, norm, scores)  # the average-length item's score
        scores *= np.frombuffer(self._alive, dtype=np.float32)[:n]
        k = min(limit, n)
        if k <= 0 or best <= 0:
            return []
        top = np.argpartition(-scores, k - 1)[:k] if k < n else np.arange(n)
        top = top[np.argsort(-scores[top], kind="stable")]
        return [
            LexicalHit(self._item_ids[i], self._master_ids[i], float(scores[i]) / best) for i in top if scores[i] > 0
        ]

    def _score_term(self, postings: _Postings, n: int, live: int, norm: np.ndarray, scores: np.ndarray) -> float:
        """Add one term's BM25 part to ``scores`` (items ``< n``); returns the term's idf."""
        docs = np.frombuffer(postings.docs, dtype=np.intp)
        if docs[-1] >= n:  # items indexed after the search began (rows only grow, so they come last)
            docs = docs[: int(np.searchsorted(docs, n))]
            if not len(docs):
                return 0.0
        df = len(docs)
        idf = self._idf(df, live)
        if df > self.common_term_ratio * live and live > 1000:
            return idf  # near-stopword: contributes little, costs a full pass
        tfs = np.frombuffer(postings.tfs, dtype=np.float32)[:df]
        part = norm[docs]  # idf * tf * (k1 + 1) / (tf + norm), in place: a fifth faster than with temporaries
        part += tfs
        np.divide(tfs, part, out=part)
        part *= idf * (self.k1 + 1.0)
        np.add.at(scores, docs, part)  # unbuffered: a third faster than ``scores[docs] += part`` (numpy >= 1.25)
        return idf
