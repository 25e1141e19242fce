"""BM25 over token lists, held in memory as compact postings and scored with numpy.

The same design as GIM's lexical index (``gateway_plugins.gim.lexical``): postings are append-only arrays of
(document row, term frequency), a removed document is a tombstone that never scores, and the index is rebuilt at
start-up from the token lists stored in the relational store. What this one adds is what code search needs: the
scores of *every* document as one array (so structural signals can be combined with them row by row), per-term
query weights, and several fields sharing one row space (chunk content, symbol names, paths).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["BM25Field"]

_ROW_TYPE = "q" if np.dtype(np.intp).itemsize == 8 else "i"


class _Postings:
    __slots__ = ("rows", "tfs")

    def __init__(self) -> None:
        self.rows = array(_ROW_TYPE)
        self.tfs = array("f")


class BM25Field:
    """One BM25 field over documents numbered by row (rows are assigned by the caller, densely from 0)."""

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, _Postings] = {}
        self._lengths = array("f")
        self._alive = array("f")
        self._total = 0.0
        self._live = 0

    def __len__(self) -> int:
        return self._live

    def _grow(self, row: int) -> None:
        while len(self._lengths) <= row:
            self._lengths.append(0.0)
            self._alive.append(0.0)

    def add(self, row: int, tokens: Sequence[str]) -> None:
        """Index ``tokens`` as document ``row`` (a row is added once; :meth:`remove` before re-adding is not
        supported: callers give a new version of a document a new row)."""
        self._grow(row)
        self._lengths[row] = float(len(tokens))
        self._alive[row] = 1.0
        self._total += len(tokens)
        self._live += 1
        counts: dict[str, int] = {}
        for token in tokens:
            counts[token] = counts.get(token, 0) + 1
        for token, count in counts.items():
            postings = self._postings.get(token)
            if postings is None:
                postings = self._postings[token] = _Postings()
            postings.rows.append(row)
            postings.tfs.append(float(count))

    def remove(self, row: int) -> None:
        if row < len(self._alive) and self._alive[row]:
            self._alive[row] = 0.0
            self._total -= self._lengths[row]
            self._live -= 1

    def document_frequency(self, token: str) -> int:
        """Live documents holding ``token`` (a removed document's postings stay as tombstones: counting them would
        make a term common to every re-indexed file look ever more common, until its idf went negative)."""
        postings = self._postings.get(token)
        if postings is None:
            return 0
        rows = np.frombuffer(postings.rows, dtype=np.intp)
        return int(np.count_nonzero(np.frombuffer(self._alive, dtype=np.float32)[rows]))

    def rows_with(self, token: str) -> np.ndarray:
        """Live rows holding ``token``."""
        postings = self._postings.get(token)
        if postings is None:
            return np.zeros(0, dtype=np.intp)
        rows = np.frombuffer(postings.rows, dtype=np.intp)
        return rows[np.frombuffer(self._alive, dtype=np.float32)[rows] > 0]

    def idf(self, token: str) -> float:
        df = self.document_frequency(token)
        n = max(self._live, 1)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def scores(self, weights: Mapping[str, float], size: int) -> np.ndarray:
        """BM25 of every row for query terms with weights (a weight multiplies the term's idf); ``size`` rows."""
        n_rows = len(self._lengths)
        out = np.zeros(max(size, n_rows), dtype=np.float32)
        if not self._live or not weights:
            return out[:size]
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        avg = max(self._total / self._live, 1.0)
        norm = self.k1 * (1.0 - self.b + self.b * lengths / avg)
        for token, weight in weights.items():
            postings = self._postings.get(token)
            if postings is None or weight <= 0:
                continue
            rows = np.frombuffer(postings.rows, dtype=np.intp)
            tfs = np.frombuffer(postings.tfs, dtype=np.float32)
            part = norm[rows]
            part += tfs
            np.divide(tfs, part, out=part)
            part *= self.idf(token) * weight * (self.k1 + 1.0)
            np.add.at(out, rows, part)  # unbuffered: a third faster than ``out[rows] += part``
        out[:n_rows] *= np.frombuffer(self._alive, dtype=np.float32)
        return out[:size]
