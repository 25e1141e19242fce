"""Matching pasted error text against the string literals of code: the raise site carries the message.

A quote is a run of words in the same order: word trigrams of a literal found among the question's. Paraphrases
share words with help texts but rarely runs of them, so a partial quote must run for at least four words.

Messages are usually formatted: ``"No such command {name!r}."``, ``"%s is not a valid %s"``,
```` `error: unknown option '${flag}'` ````. The user's text has values filled in where the placeholders were, so
a literal is split at its placeholders into fragments, and a fragment quoted whole counts even when it is short
("No such command" in "Error: No such command 'statr'."). The score of a literal is the share of its words quoted
(of the question's words, when the question is shorter: a long message is often pasted in part); a literal whose
every fragment the question holds in order ("block {name!r} defined twice") is quoted entirely.

Short messages are common (``Invalid comparator: ${comp}``, ``"timestamp missing"``), and two words are too few to
tell a quote from a coincidence anywhere in a question. They count in one place only: as the opening of the message
of a pasted error (``TypeError: Invalid comparator: >=1.2.3.4``), where the raise site's text stands.
"""

from __future__ import annotations

import re
from itertools import chain
from typing import NamedTuple

__all__ = ["Literal", "QueryText", "literal_of", "query_text", "quote_score", "word_trigrams"]

_PLACEHOLDER = re.compile(
    r"""\$?\{[^{}]*\}                                   # str.format / f-string / JS template: {name!r}, ${x}
    | %\([^)]*\)[-\#0\ +]*\d*(?:\.\d+)?[a-zA-Z]        # %(name)s
    | %[-\#0\ +]*\d*(?:\.\d+)?[sdrifgxXeEcou]           # %s, %d, %.2f
    """,
    re.X,
)

Gram = tuple[str, str, str]


_WORD = re.compile(r"[a-z_][a-z0-9_]*|[0-9]+")
"""``tokens.words`` on lower-cased text (one pass instead of lower-casing word by word)."""


def _lower_words(text: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(text.lower()))


def _trigrams(tokens: tuple[str, ...]) -> list[Gram]:
    return list(zip(tokens, tokens[1:], tokens[2:], strict=False))


def word_trigrams(text: str) -> list[Gram]:
    """Lower-cased word trigrams of ``text``, in order."""
    return _trigrams(_lower_words(text))


class QueryText(NamedTuple):
    """A question prepared for quote matching."""

    words: tuple[str, ...]
    grams: frozenset[Gram]
    vocabulary: frozenset[str]
    opening: tuple[str, ...] = ()
    """The words of a pasted error's message (after ``SomeError:``), when the question is one."""


def query_text(text: str, message: str = "") -> QueryText:
    """``text`` prepared for quote matching; ``message``: the message of the error it pastes, if any."""
    tokens = _lower_words(text)
    return QueryText(tokens, frozenset(_trigrams(tokens)), frozenset(tokens), _lower_words(message))


Literal = tuple[tuple[tuple[str, ...], ...], tuple[tuple[Gram, ...], ...], int, bool, bool]
"""A string literal prepared for quote matching: the words of each non-empty fragment between placeholders, the
trigrams of each fragment of three words or more, the number of words (the denominator of the score), and whether
it starts and whether it ends with a placeholder (``{name} is required``, ``Invalid comparator: ${comp}``).

Plain tuples of strings on purpose: literals are cached per chunk for the life of the index, and the garbage
collector stops tracking such tuples, where objects holding sets would keep adding to its long-lived generation
and trigger full collections of the whole index (a pause of most of a second at 100k chunks)."""


def literal_of(text: str) -> Literal | None:
    """The literal's fragments, or ``None`` when it has fewer than two words (nothing that can be quoted).

    Called for the string literals of every candidate chunk the first time it is a candidate: kept to a few passes
    over the text in C (one substitution, one ``findall`` per fragment)."""
    marked = _PLACEHOLDER.sub("\x00", text).lower()
    split = marked.split("\x00")
    pieces = tuple(piece for piece in map(tuple, map(_WORD.findall, split)) if piece)
    total = sum(map(len, pieces))
    if total < 2:
        return None
    open_start = len(split) > 1 and not _WORD.search(split[0])
    open_end = len(split) > 1 and not _WORD.search(split[-1])
    grams = tuple(grams for grams in map(tuple, map(_trigrams, pieces)) if grams)
    return pieces, grams, total, open_start, open_end


def _end_in_order(pieces: tuple[tuple[str, ...], ...], tokens: tuple[str, ...]) -> int:
    """Where the last piece ends in ``tokens`` when every piece occurs contiguously, each after the one before;
    else -1."""
    at = 0
    for piece in pieces:
        width = len(piece)
        while at + width <= len(tokens) and tokens[at : at + width] != piece:
            at += 1
        if at + width > len(tokens):
            return -1
        at += width
    return at


_LEADING_VALUE_WORDS = 4
"""How many words the value of a literal's leading placeholder may take (``'port' is required``)."""


def _opens(literal: Literal, opening: tuple[str, ...]) -> bool:
    """Whether a pasted message is the literal: its fragments in order from the message's first word (after the
    value of a leading placeholder), and then nothing but the value of a final placeholder (``"utf-8"`` does not
    open ``'utf-8' codec can't decode``)."""
    pieces, _, _, open_start, open_end = literal
    first = pieces[0]
    starts = range(_LEADING_VALUE_WORDS + 1) if open_start else range(1)
    for start in starts:
        if opening[start : start + len(first)] == first:
            end = _end_in_order(pieces, opening[start:])
            return end >= 0 and (open_end or start + end == len(opening))
    return False


def quote_score(literal: Literal, query: QueryText) -> float:
    """Share of the literal's words that the question quotes: all of them when every fragment is there in order;
    otherwise runs of two or more trigrams (four words), or a whole fragment of three words or more. A long message
    is usually pasted in part (its first sentence): the share is of the question's length when that is shorter. A
    literal of two words is quoted only as a pasted error's whole message (:func:`_opens`)."""
    pieces, fragments, words, _, _ = literal
    if words < 3:
        return 1.0 if _opens(literal, query.opening) else 0.0
    if len(pieces) > 1 and query.vocabulary.issuperset(chain.from_iterable(pieces)):
        if _end_in_order(pieces, query.words) >= 0:
            return 1.0
    query_grams = query.grams
    if query_grams.isdisjoint(chain.from_iterable(fragments)):
        return 0.0
    covered = 0
    for grams in fragments:
        run = 0
        for gram in (*grams, None):
            if gram is not None and gram in query_grams:
                run += 1
                continue
            if run >= 2 or run == len(grams):
                covered += run + 2
            run = 0
    return min(1.0, covered / min(words, len(query.words)))
