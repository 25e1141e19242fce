"""Ranking: lexical fields and dense similarity fused, then the structural signals a code engine has.

Every stage can be switched off (:class:`RankingOptions`) so ``bench/context_eval.py --ablation`` can measure what
each contributes. The stages, in order:

1. **lexical**: BM25 over chunk content (identifier-aware tokens), normalised by the score an average chunk holding
   every query term once would get.
2. **names and paths** (structural): BM25 over the chunk's own name (the last part of its qualified symbol) and over
   its file's stem and directories: a question about "redirects" prefers ``_send_handling_redirects``; one about
   templates prefers ``templating.py``.
3. **definitions** (structural): a chunk that *defines* an identifier the question names (``url_for``,
   ``Blueprint.register``, ``res.sendFile``) is boosted.
4. **messages**: a pasted error text is matched against the string literals of each candidate: the raise site
   carries the message (:mod:`.messages`). The exception type at the head of a pasted error
   (``jinja2.exceptions.TemplateSyntaxError: ...``) says what kind of error it is, not where it is raised: its
   words weigh less and its module path none, and its class definition gets a smaller boost. When the message is
   the exception class's own (formatted in its constructor), the functions that name the class take the quote.
5. **priors** (structural): tests, examples and docs are down-weighted unless the question asks about them; code is
   what a behaviour question is about.
6. **dense**: cosine similarity from the embedder chain, added with a weight.
7. **graph**: the active file, and the files it imports or that import it, are boosted; the active file more when
   the question points at it ("how is X done here?", "in this module"), its importers instead when the question asks
   where something the file defines is used ("where is the error defined in this module raised?").
8. **work context**: the tickets being worked on (``work_context.open_ticket_ids``, the ticket in ``git_branch``),
   the documents that mention them and the files their pull requests changed are boosted (the caller finds them:
   :func:`gateway_plugins.context.links.work_context_boosts`).

Files are ranked by their best chunk, plus a small bonus for a second good chunk (a file that answers in several
places is more likely the answer).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from gateway_plugins.context.retrieval.graph import ImportGraph
from gateway_plugins.context.retrieval.messages import Literal, literal_of, query_text, quote_score
from gateway_plugins.context.retrieval.search_index import KIND_CLASS, KIND_MODULE, SearchIndex
from gateway_plugins.context.tokens import (
    EXCEPTION_SUFFIXES,
    error_head,
    identifier_parts,
    query_identifiers,
    stem,
    tokenize,
)

__all__ = ["RankedChunk", "Ranker", "RankingOptions"]

_ASKS_TESTS = re.compile(r"\b(?:tests?|testing|pytest|unittest|spec|fixtures?)\b", re.I)
_ASKS_DOCS = re.compile(r"\b(?:docs?|documentation|readme|changelog|tutorial|guide)\b", re.I)
_ASKS_EXAMPLES = re.compile(r"\b(?:examples?|samples?|demo)\b", re.I)
_POINTS_HERE = re.compile(r"\b(?:here|th(?:is|ese) (?:file|module|class|function|method|code|script)s?|these)\b", re.I)
_DEFINED_HERE = re.compile(
    r"\b(?:defined|declared|built|made|created|from)\s+(?:in\s+)?th(?:is|ese)\s+(?:file|module)s?\b", re.I
)
_WHERE = re.compile(r"\bwhere\b", re.I)
_USE_VERB = re.compile(
    r"\b(?:used|uses|raised|raises|thrown|throws|called|calls|applied|invoked|read|consumed|imported)\b", re.I
)


def _asks_where_used(query: str) -> bool:
    """Whether a question asks where something the open file defines is used ("where is the error defined in this
    module raised?", "where is the state from this module used?"): the answer is in the files that import it.
    (Three linear searches rather than one pattern with two ``.*``, which could backtrack quadratically.)"""
    phrase = _DEFINED_HERE.search(query)
    return (
        phrase is not None
        and _WHERE.search(query, 0, phrase.start()) is not None
        and _USE_VERB.search(query, phrase.end()) is not None
    )


@dataclass(frozen=True)
class RankingOptions:
    """Weights and switches of the ranking stages (``[plugins.context.ranking]``)."""

    structural: bool = True
    name_weight: float = 0.6
    path_weight: float = 0.35
    definition_boost: float = 1.0
    error_type_weight: float = 0.3
    """Weight of the words (and share of the definition boost) of the exception type heading a pasted error."""
    messages: bool = True
    message_boost: float = 1.2
    test_penalty: float = 0.35
    asked_penalty: float = 0.8
    """The penalty of tests/docs/examples when the question mentions them (they may be the answer, or not)."""
    container_factor: float = 0.85
    """Class chunks (header and docstring without the methods) and module code rank below the functions that do
    the work a behaviour question asks about."""
    module_factor: float = 0.8
    example_penalty: float = 0.4
    doc_penalty: float = 0.5
    dense_weight: float = 0.3
    graph: bool = True
    active_file_boost: float = 0.6
    here_boost: float = 0.4
    """Added to the active file's boost when the question points at it ("here", "this module", "these")."""
    neighbour_boost: float = 0.25
    second_chunk_bonus: float = 0.15
    candidates: int = 400
    ticket_boost: float = 0.5
    """Tickets being worked on, and the pull requests and discussions that mention them."""
    linked_file_boost: float = 0.3
    """Files changed by the pull requests of the tickets being worked on."""


_MAX_RAISE_SITES = 200
"""The best-scored chunks naming an exception that may take its quote (the rest rank too low to matter)."""


def _defines(symbol: str | None, name: str) -> bool:
    """Whether a chunk's symbol is class ``name`` or one of its members."""
    return symbol is not None and (symbol == name or symbol.startswith(name + "."))


def _in_exception_class(symbol: str | None) -> bool:
    """Whether a chunk's symbol is an exception class (named as the conventions of Python, JavaScript and Java
    have it: ``...Error``, ``...Exception``, ``...Warning``) or one of its members."""
    if symbol is None:
        return False
    owner = symbol.split(".", 1)[0]
    return owner[:1].isupper() and owner.endswith(EXCEPTION_SUFFIXES)


@dataclass(frozen=True)
class RankedChunk:
    row: int
    score: float


def _normalised(scores: np.ndarray, field_ideal: float) -> np.ndarray:
    if field_ideal <= 0:
        return scores
    return scores / field_ideal


class Ranker:
    """Ranks the chunks of a :class:`SearchIndex` for a question."""

    def __init__(self, index: SearchIndex, options: RankingOptions | None = None) -> None:
        self.index = index
        self.options = options or RankingOptions()
        self.graph = ImportGraph(index)
        self._literals: dict[int, tuple[Literal, ...]] = {}
        """Each chunk's string literals prepared for quote matching (rows never change content: computed once)."""
        self._prior_cache: dict[tuple[bool, bool, bool], np.ndarray] = {}
        self._priors_version = -1

    def query_terms(self, query: str) -> dict[str, float]:
        """Query tokens and their weights: 1, except the exception type heading a pasted error (its module path is
        left out: it names where the exception class lives, not the raise site)."""
        head = error_head(query)
        if head is None:
            return dict.fromkeys(tokenize(query, drop_stopwords=True), 1.0)
        body = query.replace(head.qualified, " ", 1)
        terms = dict.fromkeys(tokenize(body, drop_stopwords=True), 1.0)
        for token in tokenize(head.name):
            terms.setdefault(token, self.options.error_type_weight)
        return terms

    def _definition_weight(self, identifier: str, query: str) -> float:
        head = error_head(query)
        if head is not None and identifier in (head.qualified, head.name):
            return self.options.error_type_weight
        return 1.0

    def lexical(self, query: str) -> np.ndarray:
        """Stages 1-3 (lexical, names and paths, definitions): a score per row, before dense and the rest. Split
        out so a search can compute it while the query is being embedded."""
        index, opts = self.index, self.options
        n = index.size
        terms = self.query_terms(query)
        ideal = sum(index.content.idf(t) * w for t, w in terms.items()) or 1.0
        score = _normalised(index.content.scores(terms, n), ideal)
        if opts.structural:
            name_ideal = sum(index.names.idf(t) * w for t, w in terms.items()) or 1.0
            score += opts.name_weight * _normalised(index.names.scores(terms, n), name_ideal)
            path_ideal = sum(index.paths.idf(t) * w for t, w in terms.items()) or 1.0
            file_scores = _normalised(index.paths.scores(terms, len(index.files)), path_ideal)
            score += opts.path_weight * file_scores[index.file_of]
            for identifier in query_identifiers(query):
                boost = opts.definition_boost * self._definition_weight(identifier, query)
                for row in index.rows_with_symbol(identifier):
                    score[row] += boost
        return score

    def rank(
        self,
        query: str,
        *,
        limit: int,
        allowed: np.ndarray | None = None,
        active_file: int | None = None,
        dense: Mapping[int, float] | None = None,
        lexical: np.ndarray | None = None,
        boost_files: Mapping[int, float] | None = None,
    ) -> list[RankedChunk]:
        """The best ``limit`` chunks. ``allowed`` masks rows (filters, tenancy); ``active_file`` is a file row;
        ``dense`` maps rows to cosine similarities; ``lexical``: :meth:`lexical` of this query, if already made;
        ``boost_files``: file rows -> a factor for their chunks (the work context)."""
        index, opts = self.index, self.options
        if index.size == 0:
            return []
        if allowed is not None and len(allowed) != index.size:  # made before rows were added: new rows stay out
            allowed = np.pad(allowed, (0, max(0, index.size - len(allowed))))[: index.size]
        mask = index.alive if allowed is None else (index.alive & allowed)
        score = self.lexical(query) if lexical is None or len(lexical) != index.size else lexical
        if dense:
            rows = np.fromiter(dense.keys(), dtype=np.intp, count=len(dense))
            sims = np.fromiter(dense.values(), dtype=np.float32, count=len(dense))
            if len(sims):
                floor = float(np.median(sims))
                top = float(sims.max())
                if top > floor:
                    score[rows] += opts.dense_weight * np.clip((sims - floor) / (top - floor), 0.0, 1.0)
        score = np.where(mask, score, 0.0)
        if opts.messages:
            self._message_boost(query, score)
        if opts.structural:
            self._priors(query, score)
        if opts.graph and active_file is not None:
            self._graph_boost(
                active_file,
                score,
                points_here=bool(_POINTS_HERE.search(query)),
                used_elsewhere=_asks_where_used(query),
            )
        for file_row, factor in (boost_files or {}).items():
            score[self.index.files[file_row].rows] *= factor
        return self._top(score, limit)

    def _candidates(self, score: np.ndarray, k: int) -> np.ndarray:
        k = min(k, len(score))
        top = np.argpartition(-score, k - 1)[:k] if k < len(score) else np.arange(len(score))
        return top[score[top] > 0]

    def _message_boost(self, query: str, score: np.ndarray) -> None:
        """Boost candidates holding a string literal the question quotes (the raise site of a pasted error).

        See :mod:`.messages`: runs of words in the same order, literals split at their format placeholders."""
        head = error_head(query)
        quoted = query_text(query, head.message if head is not None and head.reads_as_exception else "")
        if len(quoted.words) < 3 and not quoted.opening:
            return
        quotes: dict[int, float] = {}
        for row in self._candidates(score, self.options.candidates):
            best = max((quote_score(literal, quoted) for literal in self._chunk_literals(int(row))), default=0.0)
            if best >= 0.3:
                quotes[int(row)] = best
        if head is not None:
            quotes = self._raise_sites(head.name, quotes, score)
        for row, best in quotes.items():
            score[row] += self.options.message_boost * best

    def _raise_sites(self, error: str, quotes: dict[int, float], score: np.ndarray) -> dict[int, float]:
        """An exception that carries its own message (``class EmptyTableNameError(ParseError): def __init__(...):
        super().__init__(..., "Empty table name")``, the base class adding ``at line {line} col {col}``) is quoted in
        the exception classes' definitions, but the failure happened where it is raised.

        When the named exception's own definition holds a quote and no function naming the exception quotes the
        message as well (a raise site that carries it), the quotes of the exception classes' definitions (the named
        class, and classes named as the conventions have it, ``...Error``, ``...Exception``, ``...Warning``: its
        bases) go to the functions and methods that name the exception, among those still in the running; the
        definitions keep the rest of their score. A name of one word (``Gone``, ``Timeout``) is also an ordinary
        word of the code, so it is left alone."""
        index = self.index
        if len(identifier_parts(error)) < 2 or not any(_defines(index.chunks[row].symbol, error) for row in quotes):
            return quotes
        named = index.content.rows_with(stem(error))
        named = named[score[named] > 0]
        if len(named) > _MAX_RAISE_SITES:
            named = named[np.argpartition(-score[named], _MAX_RAISE_SITES - 1)[:_MAX_RAISE_SITES]]
        sites = [
            int(row)
            for row in named
            if index.chunks[row].kind in ("function", "method") and not _defines(index.chunks[row].symbol, error)
        ]
        definitions = [
            row
            for row in quotes
            if _defines(index.chunks[row].symbol, error) or _in_exception_class(index.chunks[row].symbol)
        ]
        weight = max(quotes[row] for row in definitions)
        if not sites or any(quotes.get(row, 0.0) >= weight for row in sites):
            return quotes
        for row in definitions:
            del quotes[row]
        for row in sites:
            quotes[row] = max(quotes.get(row, 0.0), weight)
        return quotes

    def _chunk_literals(self, row: int) -> tuple[Literal, ...]:
        literals = self._literals.get(row)
        if literals is None:
            prepared = (literal_of(text) for text in self.index.chunks[row].strings)
            literals = self._literals[row] = tuple(literal for literal in prepared if literal is not None)
        return literals

    def _priors(self, query: str, score: np.ndarray) -> None:
        asked = (bool(_ASKS_TESTS.search(query)), bool(_ASKS_EXAMPLES.search(query)), bool(_ASKS_DOCS.search(query)))
        score *= self._prior_factors(asked)

    def _prior_factors(self, asked: tuple[bool, bool, bool]) -> np.ndarray:
        """The prior of every row for a question that asks (or not) about tests, examples, docs; kept per index
        version (eight variants at most)."""
        if self._priors_version != self.index.version:
            self._prior_cache = {}
            self._priors_version = self.index.version
        cached = self._prior_cache.get(asked)
        if cached is not None and len(cached) == self.index.size:
            return cached
        opts = self.options
        penalties = (opts.test_penalty, opts.example_penalty, opts.doc_penalty)
        arrays = self.index.file_arrays()
        per_file = np.ones(len(arrays["alive"]), dtype=np.float32)
        for flag, was_asked, penalty in zip(("test", "example", "doc"), asked, penalties, strict=True):
            per_file[arrays[flag]] *= opts.asked_penalty if was_asked else penalty
        factors = per_file[self.index.file_of]
        kinds = self.index.kind_codes
        factors[kinds == KIND_CLASS] *= opts.container_factor
        factors[kinds == KIND_MODULE] *= opts.module_factor
        self._prior_cache[asked] = factors
        return factors

    def _graph_boost(self, active_file: int, score: np.ndarray, *, points_here: bool, used_elsewhere: bool) -> None:
        """The open file's chunks and those of its neighbours in the import graph rank higher; when the question
        asks where something of the open file is used, its importers take the open file's place."""
        opts = self.options
        imports, importers = self.graph.neighbours(active_file)
        files = self.index.files
        if used_elsewhere and importers:
            score[files[active_file].rows] *= 1.0 + opts.neighbour_boost
            for neighbour in importers:
                score[files[neighbour].rows] *= 1.0 + opts.active_file_boost
            for neighbour in imports - importers:
                score[files[neighbour].rows] *= 1.0 + opts.neighbour_boost
            return
        score[files[active_file].rows] *= 1.0 + opts.active_file_boost + (opts.here_boost if points_here else 0.0)
        for neighbour in imports | importers:
            score[files[neighbour].rows] *= 1.0 + opts.neighbour_boost

    def _top(self, score: np.ndarray, limit: int) -> list[RankedChunk]:
        candidates = self._candidates(score, max(limit * 4, 50))
        if not len(candidates):
            return []
        final = {int(row): float(score[row]) for row in candidates}
        bonus = self.options.second_chunk_bonus
        if bonus:
            by_file: dict[int, list[int]] = {}
            for row in sorted(final, key=lambda r: -final[r]):
                by_file.setdefault(int(self.index.file_of[row]), []).append(row)
            for rows in by_file.values():
                if len(rows) > 1:
                    final[rows[0]] += bonus * final[rows[1]]
        ordered = sorted(final, key=lambda r: -final[r])[:limit]
        return [RankedChunk(row, final[row]) for row in ordered]
