"""The evidence pass does linear work on any text, and finds the failure lines it found before.

``_PATHLIKE`` tried a file name (``name.py``) from every word boundary of a run of name characters, each try
scanning to the run's end: a 4,000-character ``a-a-a-...`` line (the part of an error the pass reads) took 75 ms
and a 200 kB one minutes. The rewritten form matches such a run once (as ``skip``, kept unchanged). It is checked
against the original on random text built from the characters it distinguishes, then fed the worst-case texts at
200,000 characters, where the original form would run for minutes (the suite's timeout is the hang guard; nothing
here is timed).
"""

from __future__ import annotations

import random
import re

import pytest

from gateway_plugins.gim import evidence
from gateway_plugins.gim.evidence import extract_facts
from gateway_plugins.gim.models import FixBundle
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL, repeat

ORIGINAL = re.compile(
    r"(?<![\w@/.-])(?:@?[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:py|pyx|js|mjs|cjs|ts|tsx|jsx|so|dll|java|go|rs)\b"
)
PIECES = [
    *"aAbZx19_ .:/\\~-+@<>*()[]'\",$#%|\t\n=",
    *("py", "js", ".py", ".so", ".rs", "-", "@a/", "a.b", "/x", "--"),
    *("\u00e9", "\u0663", "\u00a0", "\u00b2", "\u0301"),
]
"""Characters and fragments the pattern distinguishes, including non-ASCII letters, digits, blanks and marks."""

WORST = {
    **ADVERSARIAL,
    **CODE_ADVERSARIAL,
    "name-run a-": lambda n: repeat("a-", n),
    "name-run -a": lambda n: repeat("-a", n),
    "name-run a_-": lambda n: repeat("a_-", n),
    "name-run ab-": lambda n: repeat("ab-", n),
    "name-run then no extension": lambda n: repeat("ab-", n, tail=".p"),
    "dotted-dashes": lambda n: repeat("a.-", n),
    "scoped-paths": lambda n: repeat("@a/", n),
}
SIZE = 200_000


def _original(text: str) -> str:
    return ORIGINAL.sub(lambda m: f"<{m.group(0)}>", text)


def _rewritten(text: str) -> str:
    return evidence._PATHLIKE.sub(lambda m: m.group(0) if m.group("skip") is not None else f"<{m.group(0)}>", text)


def test_the_rewritten_pattern_replaces_what_the_original_replaced() -> None:
    rng = random.Random(15)
    for _ in range(20_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        assert _rewritten(text) == _original(text), text


def test_runs_of_name_characters_at_the_schema_maximum() -> None:
    """The original form took 90-170 s on each of these (1-2 s at 20,000 characters: a hundred times the work
    for ten times the text): together they outlast the suite's timeout, which the rewritten form does not near."""
    for name in sorted(n for n in WORST if n.startswith("name-run")):
        text = WORST[name](SIZE)
        assert _rewritten(text) == text, name  # no file name, no path: nothing replaced


@pytest.mark.parametrize("name", sorted(WORST))
def test_a_worst_case_line_goes_through_the_pattern(name: str) -> None:
    text = WORST[name](SIZE)
    assert len(_rewritten(text)) >= len(text)


@pytest.mark.parametrize("name", sorted(WORST))
def test_the_facts_of_a_worst_case_report(name: str) -> None:
    text = WORST[name](SIZE)
    fix = FixBundle.model_validate(
        {
            "env_actions": [{"order": 1, "type": "command", "command": text, "explanation": text}],
            "verification": [],
            "code_fix": text,
        }
    )
    facts = extract_facts(text, text, fix, extra_text=[text])
    assert all(len(line.template) <= len(text) for line in facts.failure_lines)
