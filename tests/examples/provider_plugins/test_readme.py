"""The README's "Write a provider plugin" section shows the examples as they are: every code block in it is a
verbatim run of lines of an example file or of its tests, so the README cannot drift from code that passes the
contract suites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
README = ROOT / "README.md"
SOURCES = [
    *sorted((ROOT / "examples" / "provider_plugins").rglob("*.py")),
    ROOT / "examples" / "provider_plugins" / "pyproject.toml",
    *sorted(Path(__file__).parent.glob("test_*.py")),
]
FENCE = re.compile(r"^```(python|toml)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def section(text: str, title: str) -> str:
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def blocks() -> list[str]:
    found = [match.group(2) for match in FENCE.finditer(section(README.read_text(), "Write a provider plugin"))]
    assert len(found) >= 14, "the section shows an example and a contract test per kind"
    return found


def is_run_of_lines(block: list[str], lines: list[str]) -> bool:
    return any(lines[i : i + len(block)] == block for i in range(len(lines) - len(block) + 1))


@pytest.mark.parametrize("block", blocks(), ids=lambda block: block.splitlines()[0][:40])
def test_every_code_block_is_taken_from_the_examples(block: str) -> None:
    lines = [line.rstrip() for line in block.splitlines()]
    if lines[0].startswith("# examples/"):  # a block that names its file
        sources = [ROOT / lines[0][2:]]
        lines = lines[1:]
    else:
        sources = SOURCES
    assert any(is_run_of_lines(lines, [line.rstrip() for line in path.read_text().splitlines()]) for path in sources), (
        "README block not found verbatim in the examples:\n" + block
    )


def test_every_kind_has_its_own_subsection() -> None:
    text = section(README.read_text(), "Write a provider plugin")
    for heading in ("Embedder", "Vector store", "Relational store", "Rate limiter", "Sanitizer layer",
                    "Authenticator", "Judge"):  # fmt: skip
        assert f"\n### {heading}\n" in text
