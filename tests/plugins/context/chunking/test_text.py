"""Prose chunking: markdown and reStructuredText by heading, other text in windows."""

from __future__ import annotations

from gateway_plugins.context.chunking import chunk_file
from gateway_plugins.context.chunking.text import TEXT_WINDOW


def test_markdown_sections_ignore_headings_inside_code_fences() -> None:
    text = "# Title\nintro\n\n## Install\npip install x\n```\n# not a heading\n```\n## Use\nrun it\n"
    chunks = chunk_file("README.md", text).chunks
    assert [c.symbol for c in chunks] == ["Title", "Install", "Use"]
    assert all(c.kind == "doc" and c.language == "markdown" for c in chunks)
    assert chunks[1].start_line == 4 and chunks[1].end_line == 8


def test_rst_sections_by_underlined_titles() -> None:
    text = "Sessions\n========\n\nIntro.\n\nSigning\n-------\n\nHMAC.\n"
    chunks = chunk_file("docs/sessions.rst", text).chunks
    assert [c.symbol for c in chunks] == ["Sessions", "Signing"]


def test_other_text_in_windows() -> None:
    text = "\n".join(f"line {i}" for i in range(TEXT_WINDOW * 2 + 5))
    chunks = chunk_file("data/notes.cfg", text).chunks
    assert [(c.start_line, c.end_line) for c in chunks] == [
        (1, TEXT_WINDOW),
        (TEXT_WINDOW + 1, 2 * TEXT_WINDOW),
        (2 * TEXT_WINDOW + 1, 2 * TEXT_WINDOW + 5),
    ]
    assert all(c.kind == "text" for c in chunks)
