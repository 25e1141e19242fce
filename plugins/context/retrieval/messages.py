"""Matching pasted error text against the string literals of code: the raise site carries the message.

A quote is a run of words in the same order: word trigrams of a literal found among the question's. Paraphrases
share words with help texts but rarely runs of them, so a partial quote must run for at least four words.

Messages are usually formatted: ``"No such command {name!r}."``, ``"%s is not a valid %s"``,
```` `error: unknown option '${flag}'` ````. The user's text has values filled in where the placeholders were, so
a literal is split at its placeholders into fragments, and a fragment quoted whole counts even when it is short
("No such command" in "Error: No such command 'statr'."). The score of a literal is the share of its words quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway_plugins.context.tokens import words

__all__ = ["Literal", "literal_of", "quote_score", "word_trigrams"]

_PLACEHOLDER = re.compile(
    r"""\$?\{[^{}]*\}                                   # str.format / f-string / JS template: {name!r}, ${x}
    | %\([^)]*\)[-\#0\ +]*\d*(?:\.\d+)?[a-zA-Z]        # %(name)s
    | %[-\#0\ +]*\d*(?:\.\d+)?[sdrifgxXeEcou]           # %s, %d, %.2f
    """,
    re.X,
)

Gram = tuple[str, str, str]


def word_trigrams(text: str) -> list[Gram]:
    """Lower-cased word trigrams of ``text``, in order."""
    tokens = [w.lower() for w in words(text)]
    return [(tokens[i], tokens[i + 1], tokens[i + 2]) for i in range(len(tokens) - 2)]


@dataclass(frozen=True)
class Literal:
    """A string literal prepared for quote matching: the trigrams of each fragment between placeholders."""

    fragments: tuple[tuple[Gram, ...], ...]
    words: int
    """Words in all fragments (placeholders excluded): the denominator of the score."""


def literal_of(text: str) -> Literal | None:
    """The literal's fragments, or ``None`` when no fragment has three words (nothing that can be quoted)."""
    pieces = _PLACEHOLDER.split(text)
    fragments = tuple(tuple(word_trigrams(piece)) for piece in pieces)
    if not any(fragments):
        return None
    return Literal(tuple(f for f in fragments if f), sum(len(words(piece)) for piece in pieces))


def quote_score(literal: Literal, query_grams: set[Gram]) -> float:
    """Share of the literal's words that the question quotes: runs of two or more trigrams (four words), or a
    whole fragment."""
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
    return covered / literal.words
