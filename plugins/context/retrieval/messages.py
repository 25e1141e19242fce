"""Matching pasted error text against the string literals of code: the raise site carries the message.

A quote is a run of words in the same order: word trigrams of a literal found among the question's. Paraphrases
share words with help texts but rarely runs of them, so a partial quote must run for at least four words.

Messages are usually formatted: ``"No such command {name!r}."``, ``"%s is not a valid %s"``,
```` `error: unknown option '${flag}'` ````. The user's text has values filled in where the placeholders were, so
a literal is split at its placeholders into fragments, and a fragment quoted whole counts even when it is short
("No such command" in "Error: No such command 'statr'."). The score of a literal is the share of its words quoted
(of the question's words, when the question is shorter: a long message is often pasted in part); a literal whose
every fragment the question holds in order ("block {name!r} defined twice") is quoted entirely.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway_plugins.context.tokens import words

__all__ = ["Literal", "QueryText", "literal_of", "query_text", "quote_score", "word_trigrams"]

_PLACEHOLDER = re.compile(
    r"""\$?\{[^{}]*\}                                   # str.format / f-string / JS template: {name!r}, ${x}
    | %\([^)]*\)[-\#0\ +]*\d*(?:\.\d+)?[a-zA-Z]        # %(name)s
    | %[-\#0\ +]*\d*(?:\.\d+)?[sdrifgxXeEcou]           # %s, %d, %.2f
    """,
    re.X,
)

Gram = tuple[str, str, str]


def _lower_words(text: str) -> tuple[str, ...]:
    return tuple(w.lower() for w in words(text))


def _trigrams(tokens: tuple[str, ...]) -> list[Gram]:
    return [(tokens[i], tokens[i + 1], tokens[i + 2]) for i in range(len(tokens) - 2)]


def word_trigrams(text: str) -> list[Gram]:
    """Lower-cased word trigrams of ``text``, in order."""
    return _trigrams(_lower_words(text))


@dataclass(frozen=True)
class QueryText:
    """A question prepared for quote matching."""

    words: tuple[str, ...]
    grams: frozenset[Gram]


def query_text(text: str) -> QueryText:
    tokens = _lower_words(text)
    return QueryText(tokens, frozenset(_trigrams(tokens)))


@dataclass(frozen=True)
class Literal:
    """A string literal prepared for quote matching: the words and trigrams of each fragment between placeholders."""

    pieces: tuple[tuple[str, ...], ...]
    """The words of each non-empty fragment, in order."""
    fragments: tuple[tuple[Gram, ...], ...]
    """The trigrams of each fragment of three words or more."""
    words: int
    """Words in all fragments (placeholders excluded): the denominator of the score."""


def literal_of(text: str) -> Literal | None:
    """The literal's fragments, or ``None`` when it has fewer than three words (nothing that can be quoted)."""
    pieces = tuple(p for p in (_lower_words(piece) for piece in _PLACEHOLDER.split(text)) if p)
    total = sum(len(piece) for piece in pieces)
    if total < 3:
        return None
    return Literal(pieces, tuple(g for g in map(tuple, map(_trigrams, pieces)) if g), total)


def _in_order(pieces: tuple[tuple[str, ...], ...], tokens: tuple[str, ...]) -> bool:
    """Every piece occurs contiguously in ``tokens``, each after the one before."""
    at = 0
    for piece in pieces:
        width = len(piece)
        while at + width <= len(tokens) and tokens[at : at + width] != piece:
            at += 1
        if at + width > len(tokens):
            return False
        at += width
    return True


def quote_score(literal: Literal, query: QueryText) -> float:
    """Share of the literal's words that the question quotes: all of them when every fragment is there in order;
    otherwise runs of two or more trigrams (four words), or a whole fragment of three words or more. A long message
    is usually pasted in part (its first sentence): the share is of the question's length when that is shorter."""
    if len(literal.pieces) > 1 and _in_order(literal.pieces, query.words):
        return 1.0
    query_grams = query.grams
    covered = 0
    for grams in literal.fragments:
        run = 0
        for gram in (*grams, None):
            if gram is not None and gram in query_grams:
                run += 1
                continue
            if run >= 2 or run == len(grams):
                covered += run + 2
            run = 0
    return min(1.0, covered / min(literal.words, len(query.words)))
