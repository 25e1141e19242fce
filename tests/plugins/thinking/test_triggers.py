"""The audit trigger heuristics: code, diffs and config blocks trigger; lists and prose do not."""

from __future__ import annotations

import pytest

from gateway_plugins.thinking.triggers import audit_trigger, fenced_blocks, outside_fences

TRIGGERS = [
    ("Check this.\n```gan-config\n{}\n```", "gan-config"),
    ("Use this helper:\n```python\nreturn 1\n```", "code-block"),
    ("```\nsome text in a fence\n```", "code-block"),
    ("~~~ts\nlet x: number = 1;\n~~~", "code-block"),
    ("diff --git a/x.py b/x.py\nindex 1..2 100644", "diff"),
    ("The hunk:\n@@ -1,2 +1,3 @@\n a\n+b\n c", "diff"),
    ("--- a/app.py\n+++ b/app.py\nchanged things", "diff"),
    ("def load(path):\n    return open(path).read()", "code"),
    ("class Cache:\n    pass", "code"),
    ("from collections import deque", "code"),
    ("import numpy as np", "code"),
    ("import { useState } from 'react'", "code"),
    ("#include <stdio.h>", "code"),
    ("export async function fetchAll(urls) {", "code"),
    ("const retries = 3;", "code"),
    ("fn main() {", "code"),
    ("func (s *Server) Start() error {", "code"),
    ("public static void main(String[] args) {", "code"),
    ("if (count > 0) {", "code"),
    ("SELECT id FROM users WHERE email = ?", "code"),
    ("client.close();", "code"),
    ("Then console.log(result) shows it", "code"),
    ("try:\n    run()", "code"),
    ("items.map(x => {", "code"),
    ("if ready == True:\n    start(now)", "code"),
    ("value = compute(a)\nif value != expected:", "code"),
]

PROSE = [
    "- item\n- item",
    "- first step\n- second step\n- third step: verify",
    "+ added benefit\n+ another one\n- a drawback",
    "* bullet\n  * nested bullet\n    - deeper",
    "1. Read the docs\n2. Write the plan\n3. Ship it",
    "This is a well-known approach - and it works - mostly.",
    "We should import the data from the old system and class it by region.",
    "The trade-off: speed vs. safety; the so-called fast-path is re-used.",
    "Next, I will return to the first idea.",
    "Use `retry()` in that case.",
    "Costs: 3 - 1 = 2 servers; budget (approx.) 10k.",
    "For example: the file(s) in the folder",
    "If the cache is cold:\n    we warm it first",
    "We compare a >= b when sorting.",
    "Conclusion: the answer is correct whenever x == y holds for each pair.\n"
    "I verified it by calling check(pair) on the examples\u2026",
    "",
]


@pytest.mark.parametrize(("text", "reason"), TRIGGERS)
def test_code_and_diffs_trigger(text: str, reason: str) -> None:
    assert audit_trigger(text) == reason


@pytest.mark.parametrize("text", PROSE)
def test_lists_and_prose_do_not_trigger(text: str) -> None:
    assert audit_trigger(text) is None


def test_an_empty_fence_is_not_code() -> None:
    assert audit_trigger("```\n```") is None


def test_fenced_blocks_are_parsed_as_commonmark_fences() -> None:
    text = "intro\n````markdown\n```python\nx = 1\n```\n````\nmiddle\n~~~\nunclosed\nrest"
    blocks = fenced_blocks(text)
    assert [(b.language, b.body, b.start_line, b.closed) for b in blocks] == [
        ("markdown", "```python\nx = 1\n```\n", 3, True),
        ("", "unclosed\nrest\n", 9, False),
    ]


def test_outside_fences_keeps_line_numbers() -> None:
    text = "a\n```py\nx\n```\nb"
    assert outside_fences(text) == "a\n\n\n\nb"


def test_a_fence_inside_a_list_item_loses_the_item_indentation() -> None:
    text = "Plan:\n1. Add the helper:\n   ```python\n   def add(a, b):\n       return a + b\n   ```\n2. Done."
    (block,) = fenced_blocks(text)
    assert (block.language, block.body, block.start_line, block.closed) == (
        "python",
        "def add(a, b):\n    return a + b\n",
        4,
        True,
    )


def test_only_newlines_break_lines() -> None:
    text = 'intro\n```python\nSEP = "a\u2028b"\n\x0c\nx = 1\n```\nafter'
    (block,) = fenced_blocks(text)
    assert block.body == 'SEP = "a\u2028b"\n\x0c\nx = 1\n'
    assert outside_fences(text) == "intro\n\n\n\n\n\nafter"


def test_a_fence_further_in_than_three_spaces_is_the_blocks_text() -> None:
    code = 'def render(md):\n    """Render markdown, e.g.\n\n    ```\n    **bold**\n    ```\n    """\n    return md\n'
    (block,) = fenced_blocks(f"Helper:\n```python\n{code}```\ndone")
    assert block.body == code and block.closed
