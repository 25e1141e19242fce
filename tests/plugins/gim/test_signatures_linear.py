"""The normalisation and tokenisation passes do linear work on any text, and match what they matched before.

Each pattern that was rewritten to stop rescanning (a long run of letters, blanks, dots or digits made them
quadratic, and a CamelCase run made ``_CAMEL_EXCEPTION`` exponential) is checked against the form it replaced, on
random text built from the characters the patterns care about: same matches, same spans. The worst-case texts then
go through the passes at the schema's maximum size, where the old forms took minutes (a 150 kB run of letters: 127
s) or never finished; the suite's timeout is the hang guard, nothing here is timed.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from gateway_plugins.gim import signatures
from gateway_plugins.gim.categories import categorise
from gateway_plugins.gim.schemas import SearchIssuesInput
from gateway_plugins.gim.signatures import MAX_LEXICAL_TOKENS, lexical_tokens, normalise_error
from gateway_plugins.gim.texts import canonical_title, query_texts
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL, repeat

MAX_CHARS: int = next(
    rule.max_length for rule in SearchIssuesInput.model_fields["error_message"].metadata if hasattr(rule, "max_length")
)
"""The schema's bound on an error message (every GIM free-text field has the same)."""

ORIGINAL = {
    "_URL": re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>)\]]+", re.IGNORECASE),
    "_PATH": re.compile(r"(?:[A-Za-z]:[\\/]|\\\\|~[\\/]|\.{1,2}[\\/]|[\\/])?(?:[\w.@+*<>\-]+[\\/])+[\w.@+*<>\-]+"),
    "_LINE_REF": re.compile(r",?\s*\bline \d+\b|:\d+(?::\d+)?(?:-\d+)?\b", re.IGNORECASE),
    "_GUTTER": re.compile(r"^\s*(?:-+>|>)?\s*\d+\s*(?:\||$|\s)"),
    "_PROMPT": re.compile(r"^\s*(?:\([\w.\-]+\)\s*)?(?:[\w.\-]+@[\w.\-]+)?[:~\w/\\.\-]*[$#%>]\s+"),
    "_CAMEL_EXCEPTION": re.compile(r"^(?:E\s+)?(?:[a-z_][\w]*\.)*(?P<type>[A-Z][a-z0-9]*(?:[A-Z][A-Za-z0-9]*)+)\s*:"),
    "_TOKEN": re.compile(r"[A-Za-z_][A-Za-z0-9_]*|\d+[A-Za-z_][A-Za-z0-9_]*"),
}
"""The forms the rewritten patterns replaced (super-linear on long runs; only ever run here on short texts)."""

PIECES = [
    *"aAbZx19_ .:/\\~-+@<>*()[]'\",$#%|^\t\n=lineE",
    *("line ", "://", "http", "Error", "://x", "site-packages/", "C:\\", "../", "0x", "v1.2", "py3.7", "Xy", "ab."),
    *("\u00e9", "\u0663", "\u00a0", "<A_1>", "E  ", "2020-01-01 ", "12:30:45"),
]
"""Characters and fragments the patterns distinguish, including non-ASCII letters, digits and blanks."""


def _texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40))) for _ in range(count)]


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[tuple[int, int], str | None]]:
    return [(m.span(), m.groupdict().get("type")) for m in pattern.finditer(text)]


@pytest.mark.parametrize("name", ["_PATH", "_LINE_REF", "_GUTTER", "_PROMPT", "_CAMEL_EXCEPTION"])
def test_a_rewritten_pattern_matches_what_the_original_matched(name: str) -> None:
    original, rewritten = ORIGINAL[name], getattr(signatures, name)
    for text in _texts(4000, seed=sum(map(ord, name))):
        assert _spans(rewritten, text) == _spans(original, text), (name, text)


def test_the_url_pattern_finds_the_urls_the_original_found() -> None:
    """The rewritten pattern also matches the start of the run a URL ends (``skip``), which the caller keeps."""
    for text in _texts(4000, seed=7):
        found = [(m.start("url"), m.end()) for m in signatures._URL.finditer(text)]
        assert found == [m.span() for m in ORIGINAL["_URL"].finditer(text)], text
        assert all(m["skip"] == text[m.start() : m.start("url")] for m in signatures._URL.finditer(text))


def test_tokens_are_the_ones_the_original_pattern_gave() -> None:
    """Runs of bare digits are now matched (whole) and dropped, where the original tried each of their positions."""
    for text in _texts(4000, seed=11):
        kept = [raw for raw in signatures._TOKEN.findall(text) if not raw.isdecimal()]
        assert kept == ORIGINAL["_TOKEN"].findall(text), text


def test_normalisation_is_unchanged_on_random_text() -> None:
    """The whole pass, against the original patterns swapped back in."""
    texts = _texts(1500, seed=3)
    current = [normalise_error(text) for text in texts]
    tokens = [lexical_tokens(text) for text in texts]
    with pytest.MonkeyPatch.context() as patch:
        for name, pattern in ORIGINAL.items():
            patch.setattr(signatures, name, pattern)
        patch.setattr(signatures, "_normalise_line", _original_normalise_line)
        assert [normalise_error(text) for text in texts] == current
        assert [lexical_tokens(text) for text in texts] == tokens


def _original_normalise_line(line: str, components: list[str]) -> str:
    """``_normalise_line`` as it was: the original URL pattern has no ``skip`` group."""
    s = signatures
    line = s._PROMPT.sub("", line)
    line = s._GUTTER.sub("", line)
    line = s._URL.sub(lambda m: m.group(0).split("://", 1)[1].split("/", 1)[0], line)
    for pattern in (s._TIMESTAMP, s._UUID, s._HEX, s._LINE_REF):
        line = pattern.sub(" ", line)
    line = s._PATH.sub(lambda m: s._shorten_path(m, components), line)
    line = s._PLACEHOLDER.sub(" ", line)
    line = s._GLUED_VERSION.sub(r"\1", line)
    line = s._VERSION.sub(" ", line)
    line = s._NUMBER.sub(" ", line)
    line = s._strip_log_prefix(line)  # a pass added after the rewrite, not a rewritten one
    return s._SPACES.sub(" ", line).strip(" \t*")


WORST = {
    **ADVERSARIAL,
    **CODE_ADVERSARIAL,
    # log prefixes: a line that is nothing but prefix pieces, and pieces that almost match
    "log-prefix-run": lambda n: repeat("[ERROR] ", n, tail="x"),
    "log-prefix-open-brackets": lambda n: repeat("[", n, tail="]x"),
    "log-prefix-file-names": lambda n: repeat("a", n, tail=".log: x"),
}


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_error_at_the_schema_maximum_is_normalised(name: str) -> None:
    make: Callable[[int], str] = WORST[name]
    text = make(MAX_CHARS)
    assert len(text) == MAX_CHARS
    signature = normalise_error(text)
    tokens = lexical_tokens(signature.text)
    assert len(tokens) <= MAX_LEXICAL_TOKENS
    assert len(signature.text) <= len(text)
    derived = query_texts(text, hybrid=True)
    assert derived is None or derived[1] == tokens
    assert canonical_title(text, text, signature)


def test_many_distinct_failure_lines_keep_their_order() -> None:
    """Each line names a failure: all are key lines, none is repeated in the rest (a set, not a list, decides)."""
    text = ADVERSARIAL["exception-lines"](MAX_CHARS)
    signature = normalise_error(text)
    assert len(signature.key_lines) > 10_000
    assert signature.text.splitlines() == list(signature.key_lines)
    assert signature.exception_type == "ValueError"


def test_a_camel_case_run_is_not_taken_for_an_exception_type() -> None:
    """``XyXy...Xy !`` made the original pattern try every split of the run (exponential: 2 s at 48 characters)."""
    signature = normalise_error(ADVERSARIAL["camel-case"](MAX_CHARS))
    assert signature.exception_type is None
    assert normalise_error("openai.lib._old_api.APIRemovedInV1:\nYou tried").exception_type == "APIRemovedInV1"


def test_the_category_of_a_worst_case_text() -> None:
    assert categorise(ADVERSARIAL["dotted"](MAX_CHARS), ADVERSARIAL["slash-path"](MAX_CHARS))
