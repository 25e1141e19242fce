"""The query passes do linear work on any question, and find the identifiers they found before.

``_QUALIFIED`` tried a name from each character of a run of name characters, each try scanning to the run's end
(twice: for a ``.`` after it, then for a ``(``): a 10,000-character question (the schema's maximum) of ``$`` took
9.5 s, of letters 7 s, while holding the event loop. The rewritten form matches such a run once (as ``skip``). It
is checked against the original on random text, then every worst-case text goes through the query passes at the
schema's maximum and at ten times it, where the original form would run for hours (the suite's timeout is the hang
guard; nothing here is timed).
"""

from __future__ import annotations

import random
import re
from functools import partial

import pytest

from gateway_plugins.context import tokens
from gateway_plugins.context.models import SearchInput
from gateway_plugins.context.tokens import error_head, query_identifiers, tokenize
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL, repeat

ORIGINAL = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)+|[A-Za-z_$][\w$]*(?=\s*\()")
PIECES = [*"aZ_$1.:#( \t\n)-", "::", "a.b", "$$", "\u00e9", "\u0663", "\u00a0", "x(", "A#b"]

MAX_QUERY: int = next(
    rule.max_length for rule in SearchInput.model_fields["query"].metadata if hasattr(rule, "max_length")
)
WORST = {
    **ADVERSARIAL,
    "blank lines": partial(repeat, "\n", head="TypeError:"),
    **CODE_ADVERSARIAL,
    **{f"run of {unit!r}": partial(repeat, unit) for unit in ("$", "1a", "$1", "a:", "a ")},
}


def _found(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text) if m.groupdict().get("skip") is None]


def test_the_rewritten_pattern_finds_what_the_original_found() -> None:
    rng = random.Random(17)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        assert _found(tokens._QUALIFIED, text) == _found(ORIGINAL, text), text


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_question_goes_through_the_query_passes(name: str) -> None:
    for size in (MAX_QUERY, 10 * MAX_QUERY):
        text = WORST[name](size)
        assert len(text) == size
        found = query_identifiers(text)
        assert all(identifier in text for identifier in found[:50])
        assert all(token for token in tokenize(text, drop_stopwords=True)[:50])
        head = error_head(text)  # ``^\s*`` under re.M scanned a run of blank lines from each of its line starts
        assert head is None or head.qualified in text
