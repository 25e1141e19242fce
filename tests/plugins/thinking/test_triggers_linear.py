"""The passes over a thought do linear work, and decide what they decided before.

The trigger patterns that let two quantifiers share characters (``\\s*;?\\s*``, ``\\s+.+``, ``\\.*[\\w.]*``) or
rescanned a dotted name from each of its parts took the square of a long blank or dotted run; each is checked
against the form it replaced on random lines, then every worst-case thought at ``max_thought_chars`` goes through
the trigger and the code extraction (the suite's timeout is the hang guard; nothing is timed).
"""

from __future__ import annotations

import random
import re

import pytest

from gateway_plugins.judges import generic_checks
from gateway_plugins.thinking import thought_code, triggers
from gateway_plugins.thinking.config import ThinkingConfig
from tests.adversarial import ADVERSARIAL, CODE_ADVERSARIAL

MAX_CHARS = ThinkingConfig().max_thought_chars

REPLACED = {
    r"^\s*class\s+\w+\s*(\(|:|\{|\s+extends\s|\s+implements\s)": r"^\s*class\s+\w+(\s*[(:{]|\s+(extends|implements)\s)",
    r"^\s*from\s+\.*[\w.]*\s+import\s+(\w+|\(|\*)": r"^\s*from(\s+[\w.]++\s+|\s\s+)import\s+(\w+|\(|\*)",
    r"^\s*import\s+[\w.]+(\s+as\s+\w+)?\s*;?\s*$": r"^\s*import\s+[\w.]++(\s+as\s+\w+)?\s*(;\s*)?$",
    r"^\s*import\s+.+\s+from\s+['\"]": r"^\s*import\s.+\sfrom\s+['\"]",
    r"^\s*(export\s+)?(async\s+)?function\s*\*?\s*\w*\s*\(": (
        r"^\s*(export\s+)?(async\s+)?function\s*(\*\s*)?(\w+\s*)?\("
    ),
    r"^\s*(try|except\b.*|finally|else)\s*:\s*$": r"^\s*((try|finally|else)\s*|except\b.*):\s*$",
}
"""Original strong-construct patterns and their rewrites."""

PIECES = [
    *"aZ_9 .\t:;()[]{}<>*=,'\"\u00e9\u00a0",
    *("class ", "from ", "import ", " as ", "function", "except", "try", "else", "extends ", "implements "),
    *("if ", "elif ", "debugger", "//", "a.b", "f(x)", "  ", "\n"),
]


def _lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_the_strong_patterns_decide_as_the_originals_did() -> None:
    strong = {pattern.pattern: pattern for pattern in triggers._STRONG}
    for number, (original, rewritten) in enumerate(REPLACED.items()):
        assert rewritten in strong, rewritten
        before = re.compile(original)
        for line in _lines(3000, seed=number):
            assert bool(strong[rewritten].search(line)) == bool(before.search(line)), (original, line)


def test_the_weak_signals_decide_as_the_originals_did() -> None:
    call = re.compile(r"\b[A-Za-z_]\w*(\.\w+)*\([^()\s]*\)")
    block = re.compile(r"^\s*(if|elif|for|while|with)\s+.+:\s*$")
    for line in _lines(6000, seed=99):
        assert bool(triggers._WEAK["call"](line)) == bool(call.search(line)), line
        assert bool(triggers._WEAK["python-block"](line)) == bool(block.search(line)), line


def test_fences_open_where_they_opened() -> None:
    fence = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
    rng = random.Random(17)
    for _ in range(6000):
        line = "".join(rng.choice(["`", "~", " ", "py", "x"]) for _ in range(rng.randint(0, 12)))
        before, after = fence.match(line), triggers._FENCE_OPEN.match(line)
        assert (before and before.groupdict()) == (after and after.groupdict()), line


def test_the_python_hint_and_the_debugger_line_decide_as_before() -> None:
    hint = re.compile(r"^\s*(def|class|import|from|async def)\s", re.MULTILINE)
    debugger = re.compile(r"^\s*debugger\s*;?\s*(//.*)?$")
    for text in _lines(6000, seed=5):
        assert bool(thought_code._PYTHON_HINT.search(text)) == bool(hint.search(text)), text
        assert bool(generic_checks._JS_DEBUGGER.match(text)) == bool(debugger.match(text)), text


@pytest.mark.parametrize("name", sorted({**ADVERSARIAL, **CODE_ADVERSARIAL}))
def test_a_worst_case_thought_at_the_maximum_is_scanned(name: str) -> None:
    make = {**ADVERSARIAL, **CODE_ADVERSARIAL}[name]
    for thought in (make(MAX_CHARS), f"```\n{make(MAX_CHARS - 8)}\n```"):
        triggers.audit_trigger(thought)
        files, patches = thought_code._scan(thought)
        assert all(file.content for file in files) and isinstance(patches, list)


def test_code_too_deeply_nested_to_parse_is_not_an_error() -> None:
    """``ast.parse`` gives up on it with RecursionError (not SyntaxError): the block is simply not Python."""
    deep = "def f():\n    return " + "a+" * 40_000 + "a\n"
    [block] = thought_code._scan(f"```\n{deep}```")[0]
    assert block.path.endswith(".txt")
