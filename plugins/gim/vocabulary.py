"""How common each term is in the stored explanations: the document frequencies behind the mechanism check.

Every active item's *explanation terms* (the stemmed identifier terms of its root cause and fix,
:func:`explanation_terms`) count once. :meth:`ExplanationVocabulary.idf` turns a term's document frequency into a
weight: a term that half of the memory's explanations use ("install", "version", a deployment's boilerplate like
"see the linked thread") weighs almost nothing, a term no stored explanation uses ("transformIgnorePatterns",
"safe.directory", "chown") weighs :attr:`~ExplanationVocabulary.unseen`. The weights therefore come from the
deployment's own corpus and follow it as it grows, like the lexical index's BM25 weights over error tokens.

Until the memory holds a few dozen explanations, document frequencies say little (in a memory of one item, every
term of it looks common): the weights count :data:`PRIOR_DOCUMENTS` virtual explanations that use no term, so they
start nearly uniform and become the corpus's own as it grows (at 500 items the prior moves a weight by about 1 %).

The terms of each item are stored with it (``gim_items.terms``), so the vocabulary is rebuilt at start-up and follows
other processes' items through the same catch-up as the lexical index (:meth:`GimCore.catch_up`). Items written
before that column existed are read from their stored resolution text once per process.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from functools import lru_cache

import snowballstemmer

from gateway_plugins.gim.evidence import identifier_tokens

__all__ = ["PRIOR_DOCUMENTS", "ExplanationVocabulary", "explanation_terms", "stem"]

PRIOR_DOCUMENTS = 50
"""Virtual explanations without any term, added to the corpus size in :meth:`ExplanationVocabulary.idf`."""

_STEMMER = snowballstemmer.stemmer("english")
_WORDISH = re.compile(r"^[a-z]+$")


@lru_cache(maxsize=65536)
def stem(token: str) -> str:
    """The English stem of a plain word (``installs`` and ``installed`` give ``instal``); identifiers with digits
    or underscores are kept as they are (``torch_cuda_arch_list``, ``cu121``)."""
    return _STEMMER.stemWord(token) if _WORDISH.match(token) else token


def explanation_terms(text: str) -> frozenset[str]:
    """The stemmed identifier terms of ``text`` (:func:`gateway_plugins.gim.evidence.identifier_tokens`)."""
    return frozenset(stem(token) for token in identifier_tokens(text))


class ExplanationVocabulary:
    """Document frequencies of explanation terms over the active items (each item counts once)."""

    def __init__(self) -> None:
        self._df: dict[str, int] = {}
        self._documents = 0

    def __len__(self) -> int:
        return self._documents

    def add(self, terms: Iterable[str]) -> None:
        """Count one item's explanation terms (the caller adds each item once, as the lexical index does)."""
        self._documents += 1
        df = self._df
        for term in set(terms):
            df[term] = df.get(term, 0) + 1

    def idf(self, term: str) -> float:
        """BM25's inverse document frequency, ``log(1 + (N - df + 0.5) / (df + 0.5))``, with ``N`` the number of
        stored explanations plus :data:`PRIOR_DOCUMENTS`."""
        df = self._df.get(term, 0)
        return math.log(1.0 + (self._documents + PRIOR_DOCUMENTS - df + 0.5) / (df + 0.5))

    @property
    def unseen(self) -> float:
        """The weight of a term that no stored explanation uses: the unit of the mechanism check's smoothing."""
        return self.idf("\x00")

    def weight(self, terms: Iterable[str]) -> float:
        return sum(self.idf(term) for term in terms)
