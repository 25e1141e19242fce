"""Error-signature normalisation: the same root cause yields the same signature across machines.

Two reports of one failure differ in everything that is about the reporter rather than the failure: absolute
paths (home directories, virtualenvs, temp build dirs), line and column numbers, memory addresses, version
numbers, timestamps, UUIDs and hashes, sanitiser placeholders, prompts, caret underlines, and typographic
quotes. :func:`normalise_error` removes those and keeps what identifies the failure: the exception type, its
message, and the library-relative part of each path (``torch/cuda/__init__.py``), which names the component that
failed. The exception lines are moved to the front so that an embedder that truncates long inputs still sees
them.

Nothing here is tuned to particular errors: every rule is a general property of stack traces and logs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["MAX_LEXICAL_TOKENS", "ErrorSignature", "lexical_tokens", "normalise_error", "normalise_text"]

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "`": "'", "\uff1a": ":"})

# Every pattern below is applied to request text of up to hundreds of kilobytes, so each one does linear work: no
# quantified part can match what a neighbouring quantifier matches (no backtracking into the same characters), and
# a pattern that could start at every character of a long run starts only where the run starts (the leftmost
# match of the run always does; the guards below never drop a match). tests/plugins/gim/test_signatures_linear.py
# checks every pattern against the form it replaced, on random text.
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*?(?:_\d+)?>")
_NUMBERED_PLACEHOLDER = re.compile(r"<(?P<label>[A-Z][A-Z0-9_]*?)_\d+>")  # the sanitizer's: <INTERNAL_HOST_1>
_SCHEME_CHAR = r"[a-z0-9+.-]"
_URL = re.compile(
    # A URL starts at a word boundary inside a run of scheme characters that ends in "://". The run's start is
    # matched (``skip``), checked once for the "://" (so a long run without one costs one scan), and the URL proper
    # starts at the run's first letter on a word boundary.
    rf"(?<!{_SCHEME_CHAR})(?={_SCHEME_CHAR}*+://[^\s'\"<>)\]])(?P<skip>{_SCHEME_CHAR}*?)"
    rf"\b(?P<url>[a-z]{_SCHEME_CHAR}*+://[^\s'\"<>)\]]+)",
    re.IGNORECASE,
)
_SEGMENT = r"[\w.@+*<>\-]"
# A path: an optional drive or leading ./ ../ / ~, then at least two segments separated by / or \. Without a
# prefix it starts only where a run of segment characters starts.
_PATH = re.compile(
    rf"(?:[A-Za-z]:[\\/]|\\\\|~[\\/]|\.{{1,2}}[\\/]|[\\/]|(?<!{_SEGMENT}))(?:{_SEGMENT}++[\\/])+{_SEGMENT}++",
)
_LIBRARY_ROOTS = re.compile(
    r"(?:site-packages|dist-packages|node_modules|vendor|gems|\.cargo[\\/]registry[\\/]src|go[\\/]pkg[\\/]mod)[\\/]",
    re.IGNORECASE,
)
_TIMESTAMP = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ,]+\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?)?\b|"
    r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"
)
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.IGNORECASE)
_HEX = re.compile(r"\b0x[0-9a-f]+\b|\b[0-9a-f]{12,}\b", re.IGNORECASE)
_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+)+(?:[a-z]+\d*)?(?:[+-][\w.]+)?(?![\w])", re.IGNORECASE)
_GLUED_VERSION = re.compile(r"\b([a-z]{3,})\d+(?:\.\d+)+\b", re.IGNORECASE)  # python3.12, py3.7
# ", line 12" / ":12:5": blanks before "line" are taken from where their run starts.
_LINE_REF = re.compile(r",?(?<!\s)\s*\bline \d+\b|:\d+(?::\d+)?(?:-\d+)?\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
# Addresses that say which side failed, not where: ``::1`` (Node 17+ resolves localhost to IPv6) against
# ``127.0.0.1`` is the whole difference between two causes. Named before line references and versions eat them.
_LOCAL_ADDRESS = re.compile(r"(?<![\w:.\[])(?:\[::1\]|::1|127\.0\.0\.1|0\.0\.0\.0)(?![\w.\]])")
_ADDRESS_WORDS = {
    "::1": "ipv6-loopback",
    "[::1]": "ipv6-loopback",
    "127.0.0.1": "ipv4-loopback",
    "0.0.0.0": "any-address",
}
_GUTTER = re.compile(r"^\s*(?:(?:-+>|>)\s*)?\d+\s*(?:\||$|\s)")  # notebook / compiler source gutters: "---> 16 x"
_CARETS = re.compile(r"^[\s^~\-|]*$")
_PROMPT = re.compile(r"^\s*(?:\([\w.\-]+\)\s*)?(?:[\w.\-]++@[\w.\-]++)?[:~\w/\\.\-]*+[$#%>]\s+")
_SPACES = re.compile(r"[ \t]+")
# A log line's prefix says when, where and how severe, not what failed: what is left of a timestamp, a bracketed or
# braced group holding only log words, numbers or a source file reference (``[ ][ERROR]``, ``{taskinstance.py }``,
# ``[rank0]:``), a CI runner's ``##[error]``, a BuildKit step number (``# ``), an upper-case level word, a grep
# file name (``slurm-48121.out:``). A named tag (``[Vue warn]``, ``[postcss]``, ``[scrapy.core.scraper]``) names the
# component and stays. Each piece is bounded and matched where the previous one ended: linear.
_PREFIX_PIECE = re.compile(
    r"[ \t]*(?:\[(?P<bracket>[^\[\]\n]{0,100})\]|\{(?P<brace>[^{}\n]{0,100})\}|##\[\w{1,20}\]|#(?=[ \t])"
    r"|(?:CRITICAL|ERROR|ERRO|WARNING|WARN|INFO|DEBUG|FATAL|TRACE|NOTICE)\b|[\w.\-]{1,100}\.(?:out|log|err):(?=[ \t]))"
    r"[ \t]*[:|]?"
)
_PREFIX_DASH = re.compile(r"[ \t]*-[ \t]+")
_LOG_WORDS = frozenset(
    "critical error erro err warning warn info debug fatal trace notice rank pid tid utc gmt".split()
)
_PREFIX_WORD = re.compile(r"[A-Za-z]+")
_SOURCE_REF = re.compile(r"\s*[\w.\-]+\.(?:py|js|ts|java|go|rb|rs|c|cc|cpp|kt|scala)\s*")
_EXCEPTION_LINE = re.compile(
    r"(?:^|[\s(\['\"])(?:E\s+)?(?P<type>[A-Za-z_][\w.]*?(?:Error|Exception|Warning|Exit|Interrupt|Fault|Failure))"
    r"\b\s*(?::|$)"
)
_CAMEL_EXCEPTION = re.compile(r"^(?:E\s+)?(?:[a-z_]\w*\.)*(?P<type>[A-Z][a-z0-9]*[A-Z][A-Za-z0-9]*+)\s*:")
"""A line that starts with a dotted CamelCase compound and a colon: ``openai.lib._old_api.APIRemovedInV1:``."""
_ERRNO_LINE = re.compile(r"\b(?:error|fatal|failed|failure|cannot|can't|unable|not found|refused|denied)\b", re.I)

_STOPWORDS = frozenset(
    "a an and are as at be been but by can could did do does for from had has have how i if in into is it its "
    "me my no not of on or our so such than that the their then there these this to too was we were what when "
    "which while will with you your".split()
)


@dataclass(frozen=True)
class ErrorSignature:
    """The machine-independent form of an error report."""

    exception_type: str | None
    """The last exception type named (``AttributeError``, ``APIRemovedInV1``), without its module prefix."""
    key_lines: tuple[str, ...]
    """Normalised lines that state the failure (exception lines, or lines that say error/failed/cannot)."""
    text: str
    """Key lines first, then the other normalised lines, each once: what is embedded and indexed."""
    components: tuple[str, ...] = field(default=())
    """Library-relative module paths seen in the frames (``torch/cuda/__init__.py``)."""

    @property
    def head(self) -> str:
        """The failure statement alone (key lines), or the text's start when no line stood out."""
        return "\n".join(self.key_lines) if self.key_lines else self.text[:400]


def _shorten_path(match: re.Match[str], components: list[str]) -> str:
    path = match.group(0)
    if "/" not in path and "\\" not in path:
        return path
    parts = _LIBRARY_ROOTS.split(path)
    if len(parts) > 1:
        tail = parts[-1].replace("\\", "/")
        # drop egg / wheel directory names: "plantcv-3.8.0.egg/plantcv/x.py" -> "plantcv/x.py"
        segments = [s for s in tail.split("/") if s and not re.search(r"\.(?:egg|dist-info|whl)$", s)]
        tail = "/".join(segments if len(segments) <= 3 else [segments[0], *segments[-2:]])
        components.append(tail)
        return tail
    # a user's own path: keep the file name only
    segments = [s for s in re.split(r"[\\/]", path) if s]
    return segments[-1] if segments else ""


def _clean(text: str) -> str:
    return _ANSI.sub("", text.translate(_QUOTES))


def normalise_text(text: str) -> str:
    """Generic clean-up for prose (quotes, ANSI codes, sanitiser placeholders, runs of blanks)."""
    text = _PLACEHOLDER.sub(" ", _clean(text))
    return _SPACES.sub(" ", text).strip()


def readable_placeholders(text: str) -> str:
    """``text`` with each sanitiser placeholder as the kind of value it stands for (``<INTERNAL_HOST_1>`` becomes
    ``<internal host>``): for a title, which reads wrong with the value simply gone ("fails on  from")."""
    return _NUMBERED_PLACEHOLDER.sub(lambda m: f"<{m['label'].lower().replace('_', ' ')}>", text)


def _strip_log_prefix(line: str) -> str:
    """``line`` without its log prefix (see ``_PREFIX_PIECE``); a line that is (nearly) all prefix is left as it
    is, so that it is not dropped as empty."""
    position = 0
    while match := _PREFIX_PIECE.match(line, position):
        inner = match.group("bracket") if match.group("bracket") is not None else match.group("brace")
        if inner is not None and not (
            _SOURCE_REF.fullmatch(inner) or all(w.lower() in _LOG_WORDS for w in _PREFIX_WORD.findall(inner))
        ):
            break  # a named tag: the message starts here
        if match.end() == position:
            break
        position = match.end()
    if position and (dash := _PREFIX_DASH.match(line, position)):
        position = dash.end()
    rest = line[position:]
    return rest if len(rest.strip(" \t*")) >= 2 else line


def _normalise_line(line: str, components: list[str], *, keep_numbers: bool = False) -> str:
    line = _PROMPT.sub("", line)
    line = _GUTTER.sub("", line)
    line = _URL.sub(lambda m: m["skip"] + m["url"].split("://", 1)[1].split("/", 1)[0], line)
    line = _TIMESTAMP.sub(" ", line)
    line = _UUID.sub(" ", line)
    line = _LOCAL_ADDRESS.sub(lambda m: f" {_ADDRESS_WORDS[m[0]]} ", line)
    line = _HEX.sub(" ", line)
    line = _LINE_REF.sub(" ", line)
    line = _PATH.sub(lambda m: _shorten_path(m, components), line)
    line = _PLACEHOLDER.sub(" ", line)
    line = _GLUED_VERSION.sub(r"\1", line)
    line = _VERSION.sub(" ", line)
    if not keep_numbers:
        line = _NUMBER.sub(" ", line)
    line = _strip_log_prefix(line)
    line = _SPACES.sub(" ", line).strip(" \t*")
    return line


def failure_line(text: str, signature: ErrorSignature) -> str | None:
    """The line of ``text`` that states the failure (the signature's last key line) as a reader wants it: free of
    paths, versions, addresses and line numbers like the key line, but with its numbers (``[Errno 13]``,
    ``HTTP 404``) kept and its placeholders readable (:func:`readable_placeholders`)."""
    if not signature.key_lines:
        return None
    for raw_line in _clean(text).splitlines():
        if raw_line.strip() and _normalise_line(raw_line, []) == signature.key_lines[-1]:
            return _normalise_line(readable_placeholders(raw_line), [], keep_numbers=True)
    return None


def normalise_error(text: str) -> ErrorSignature:
    """Normalise an error message or stack trace into its :class:`ErrorSignature`."""
    components: list[str] = []
    raw = _clean(text)
    lines: list[str] = []
    seen: set[str] = set()
    key: list[str] = []
    exc_type: str | None = None
    for raw_line in raw.splitlines():
        if not raw_line.strip() or _CARETS.match(raw_line):
            continue
        line = _normalise_line(raw_line, components)
        if len(line) < 2 or line in seen:
            continue
        seen.add(line)
        lines.append(line)
        matches = list(_EXCEPTION_LINE.finditer(line))
        camel = _CAMEL_EXCEPTION.match(line) if not matches else None
        if matches or camel:
            exc_type = (matches[-1] if matches else camel).group("type").rsplit(".", 1)[-1]  # type: ignore[union-attr]
            key.append(line)
    if not key:
        key = [line for line in lines if _ERRNO_LINE.search(line)][-3:]
    chosen = set(key)
    rest = [line for line in lines if line not in chosen]
    body = "\n".join([*key, *rest])
    return ErrorSignature(
        exception_type=exc_type,
        key_lines=tuple(key),
        text=body,
        components=tuple(dict.fromkeys(components)),
    )


MAX_LEXICAL_TOKENS = 8192
"""Tokens kept per text. Real stack traces stay far below (the evaluation set's longest has 106); the bound keeps a
200 kB paste of distinct words from costing tens of milliseconds on the event loop when it is indexed or looked up,
and from adding tens of thousands of terms to the index."""
_TOKEN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d++(?:[A-Za-z_][A-Za-z0-9_]*)?")
"""Identifiers, and digits glued to one (``2to3``). A run of bare digits is matched too, as a whole, and dropped:
trying each of its positions in turn for a letter after it would cost the square of its length."""
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def lexical_tokens(text: str) -> list[str]:
    """Tokens for the lexical index: lower-cased identifiers and words, plus the parts of compound identifiers.

    ``ModuleNotFoundError`` yields ``modulenotfounderror`` and ``module``, ``not``-free ``found``, ``error``;
    ``torch._six`` yields ``torch`` and ``six``. Stop words and single characters are dropped. At most
    :data:`MAX_LEXICAL_TOKENS`, from the start of the text (a signature starts with its failure lines).
    """
    out: list[str] = []
    for match in _TOKEN.finditer(text):
        if len(out) >= MAX_LEXICAL_TOKENS:
            break
        raw = match.group()
        if raw.isdecimal():
            continue
        word = raw.strip("_")
        if not word:
            continue
        lower = word.lower()
        if len(lower) > 1 and lower not in _STOPWORDS:
            out.append(lower)
        parts = [p.lower() for chunk in word.split("_") for p in _CAMEL.findall(chunk)]
        if len(parts) > 1:
            out.extend(p for p in parts if len(p) > 1 and p not in _STOPWORDS and not p.isdigit())
    return out[:MAX_LEXICAL_TOKENS]
