"""Identifier-aware tokenisation for code search.

A token stream keeps every identifier whole (``send_handling_redirects``, ``sendfile``) and adds its parts split at
``snake_case`` and ``camelCase`` boundaries (``send``, ``handling``, ``redirects``), all lower-cased and reduced to
their Snowball (Porter 2) stem, so "redirects" in a question meets ``_send_handling_redirects`` in the code and
"templates" meets ``templating.py``. Stems are cached: a code base has a small vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import snowballstemmer

__all__ = [
    "EXCEPTION_SUFFIXES",
    "STOPWORDS",
    "ErrorHead",
    "error_head",
    "identifier_parts",
    "query_identifiers",
    "stem",
    "tokenize",
    "words",
]

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_STEMMER = snowballstemmer.stemmer("english")

STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does doing done each for from get gets got had has have
    how i if in into is it its it's just me my no not of off on once only or other our out over own same should so
    some such than that the their them then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours here happens happen instead even
    still end ends way""".split()
)
"""English words that carry no meaning in a code-search question (dropped from queries, not from documents)."""


_BRITISH = (
    (
        re.compile(
            r"^(colo|behavio|favo|hono|flavo|labo|neighbo|humo|rumo|vapo|armo|harbo|rigo|vigo|savo|endeavo|odo)ur"
        ),
        r"\1r",
    ),
    (
        re.compile(
            r"^(normal|initial|serial|deserial|recogn|organ|optim|custom|final|material|synchron|author|util|summar"
            r"|priorit|visual|minim|maxim|emphas|real|special|standard|token|local|capital|categor|sanit|stabil"
            r"|parametr|parameter|memo|random|general|critic|modern|central|legal|normal|serial)is(e|ed|es|ing|ation"
            r"|ations|er|ers)$"
        ),
        r"\1iz\2",
    ),
    (re.compile(r"^(anal|paral|catal)ys(e|ed|es|ing)$"), r"\1yz\2"),
    (re.compile(r"^(cent|met|fib|theat)re(s|d)?$"), r"\1er\2"),
    (re.compile(r"^(catalog|dialog|analog)ue(s)?$"), r"\1\2"),
    (re.compile(r"^licenc(e|es|ed|ing)$"), r"licens\1"),
    (re.compile(r"^grey(s)?$"), r"gray\1"),
)
"""British spellings and their American forms (code is written in American English: ``color``, ``normalize``,
``center``), applied before stemming so that a question written "colour" meets ``color`` in the code."""


def _american(word: str) -> str:
    for pattern, replacement in _BRITISH:
        word, count = pattern.subn(replacement, word)
        if count:
            break
    return word


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """The lower-cased Snowball stem of ``word`` (British spellings first in their American form)."""
    lowered = word.lower()
    if len(lowered) <= 3 or not lowered.isalpha():
        return lowered
    return _STEMMER.stemWord(_american(lowered))


@lru_cache(maxsize=200_000)
def identifier_parts(identifier: str) -> tuple[str, ...]:
    """The words of an identifier: ``_send_handling_redirects`` -> ``send handling redirects``, ``parseURL`` ->
    ``parse URL`` (original case)."""
    parts: list[str] = []
    for piece in identifier.split("_"):
        if piece:
            parts.extend(_CAMEL.findall(piece))
    return tuple(parts)


@lru_cache(maxsize=200_000)
def _word_tokens(word: str) -> tuple[str, ...]:
    parts = identifier_parts(word)
    whole = stem(word.strip("_")) if word.strip("_") else ""
    out = [whole] if whole else []
    if len(parts) > 1:
        out.extend(stem(p) for p in parts)
    return tuple(t for t in out if t)


def words(text: str) -> list[str]:
    """The raw identifier-like words of ``text``, in order."""
    return _WORD.findall(text)


def tokenize(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """Index tokens of ``text``: each identifier whole plus its snake/camel parts, stemmed and lower-cased."""
    out: list[str] = []
    for word in _WORD.findall(text):
        if drop_stopwords and word.lower() in STOPWORDS:
            continue
        out.extend(_word_tokens(word))
    return out


# A dotted name (``a.b``, ``a::b``, ``a#b``) or a name before ``(``; a name that is neither is matched whole as
# ``skip``: the search then resumes after it instead of trying it again from each of its characters (which made a
# run of ``$`` or letters quadratic: 10,000 characters took 7-10 s). The matches are those of the original form
# (tests/plugins/context/test_tokens_linear.py).
_QUALIFIED = re.compile(r"[A-Za-z_$][\w$]*+(?:(?:(?:\.|::|#)[A-Za-z_$][\w$]*+)+|(?=\s*\()|(?P<skip>))")
_IDENTIFIER_LIKE = re.compile(r"\b(?:_+\w+|\w+_\w*|[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")


def query_identifiers(query: str) -> list[str]:
    """Identifiers a question names: dotted names (``app.use``, ``Blueprint.register``), calls (``url_for(``),
    ``snake_case``/``camelCase``/``PascalCase`` words. Plain English words are not identifiers."""
    found: list[str] = []
    for match in _QUALIFIED.finditer(query):
        if match.group("skip") is not None:
            continue
        token = match.group(0)
        if "." in token and token.replace(".", "").isdigit():
            continue
        found.append(token)
    found.extend(_IDENTIFIER_LIKE.findall(query))
    seen: dict[str, None] = {}
    for token in found:
        token = token.strip(".")
        if len(token) > 2 and not _is_sentence_dot(token):
            seen.setdefault(token, None)
    return list(seen)


def _is_sentence_dot(token: str) -> bool:
    """``context.What`` (two sentences glued by a period) is not an identifier."""
    if "." not in token:
        return False
    head, _, tail = token.partition(".")
    return head.islower() and tail[:1].isupper() and not any(c.isupper() for c in tail[1:])


def unique(tokens: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(tokens))


EXCEPTION_SUFFIXES = ("Error", "Exception", "Warning")
"""How Python, JavaScript and Java name their exception types."""

_ERROR_HEAD = re.compile(r"^[ \t]*((?:[A-Za-z_][\w$]*\.)*)([A-Z][\w$]*)[ \t]*:[ \t]+(?=\S)", re.M)
r"""Blanks, not ``\s``, around the name: ``\s`` would cross line ends, and from every line start of a run of blank
lines scan the rest of the run (quadratic)."""


@dataclass(frozen=True)
class ErrorHead:
    """The exception type at the head of a pasted error line (``jinja2.exceptions.TemplateSyntaxError: ...``)."""

    qualified: str
    """As written, module path included (``jinja2.exceptions.TemplateSyntaxError``)."""
    name: str
    """The type's own name (``TemplateSyntaxError``)."""
    module: str
    """The module path before it, without the final dot (``jinja2.exceptions``), or empty."""
    message: str = ""
    """The rest of its line: the message (``unexpected '}'``)."""

    @property
    def reads_as_exception(self) -> bool:
        """Whether the ``Name:`` reads as an exception type (``TypeError``, ``BadTimeSignature``, ``pkg.Gone``), not a
        word of prose (``Question:``, ``Note:``)."""
        return bool(self.module) or self.name.endswith(EXCEPTION_SUFFIXES) or len(identifier_parts(self.name)) > 1


def error_head(query: str) -> ErrorHead | None:
    """The exception type a pasted error starts a line with: a capitalised (optionally module-qualified) name
    followed by a colon and the message (``TypeError: ...``, ``rich.errors.MarkupError: ...``, ``Error: ...``).

    It says what *kind* of error was raised, not where: the message after it is what identifies the raise site. The
    first such line that reads as an exception type wins, so a line of prose above the error (``Context: ...``) does
    not hide it; with none, the first ``Name:`` line."""
    first: ErrorHead | None = None
    for match in _ERROR_HEAD.finditer(query):
        module, name = match.group(1).rstrip("."), match.group(2)
        line_end = query.find("\n", match.end())
        message = query[match.end() : line_end if line_end >= 0 else len(query)]
        head = ErrorHead(f"{module}.{name}" if module else name, name, module, message)
        if head.reads_as_exception:
            return head
        first = first or head
    return first
