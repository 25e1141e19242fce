"""What the connectors match against a caller's document path or a fetched text costs linear work.

A path is matched whole (``fullmatch``), so each pattern is tried from its first character only, and none of its
quantified parts can take what the next one takes: a path of a million characters is rejected after one pass. A
Slack message's markup is rewritten by one pass whose every try ends at the next ``<`` or ``>``. Fed the worst-case
texts at two million characters (the suite's timeout is the hang guard; nothing here is timed).
"""

from __future__ import annotations

from functools import partial

import pytest

from gateway.api import NotFound, ValidationFailed
from gateway_plugins.connectors import github, jira, slack
from gateway_plugins.connectors.common import match_path
from tests.adversarial import ADVERSARIAL, repeat

SIZE = 2_000_000
SHAPES = {
    "github": (github._PATH, ("/issues/1", "/pull/7", "")),
    "jira": (jira._KEY, ("-1", "")),
    "slack": (slack._PATH, ("/1712345678.000100", "")),
}
UNITS = ("a", "A", "1", "A1", "a/", "AA-", "A-1", "C1", "-", ".", "$.", " _", "a/a/")
WORST = {**ADVERSARIAL, **{f"run of {unit!r}": partial(repeat, unit) for unit in UNITS}}


@pytest.mark.parametrize("connector", sorted(SHAPES))
def test_a_worst_case_path_is_decided_in_one_pass(connector: str) -> None:
    """Matched whole (``AAA...A-1`` is a well-formed Jira key) or refused."""
    pattern, tails = SHAPES[connector]
    for make in WORST.values():
        for tail in tails:
            path = make(SIZE - len(tail)) + tail
            try:
                assert match_path(path, pattern, "shape").end() == len(path)
            except (NotFound, ValidationFailed) as refused:
                assert "shape" in str(refused)


@pytest.mark.parametrize("name", sorted(WORST))
def test_slack_markup_of_a_worst_case_message(name: str) -> None:
    text = WORST[name](SIZE)
    for message in (text, "<" + text, "<a|" + text, repeat("<a|", SIZE)):
        assert len(slack.plain_text(message)) <= len(message)
