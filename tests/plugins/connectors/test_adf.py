"""Atlassian Document Format to text: every node a Jira description or comment holds reads as a person wrote it."""

from __future__ import annotations

from gateway_plugins.connectors.adf import adf_to_text


def text(value: str, *marks: dict) -> dict:
    return {"type": "text", "text": value, "marks": list(marks)} if marks else {"type": "text", "text": value}


def para(*content: dict) -> dict:
    return {"type": "paragraph", "content": list(content)}


def doc(*content: dict) -> dict:
    return {"type": "doc", "version": 1, "content": list(content)}


def test_blocks_lists_tables_panels_and_inline_nodes() -> None:
    rendered = adf_to_text(
        doc(
            {"type": "heading", "attrs": {"level": 3}, "content": [text("Cause")]},
            {
                "type": "bulletList",
                "content": [
                    {
                        "type": "listItem",
                        "content": [
                            para(text("outer")),
                            {"type": "bulletList", "content": [{"type": "listItem", "content": [para(text("inner"))]}]},
                        ],
                    },
                ],
            },
            {
                "type": "orderedList",
                "attrs": {"order": 3},
                "content": [{"type": "listItem", "content": [para(text("third"))]}],
            },
            {
                "type": "taskList",
                "content": [{"type": "taskItem", "attrs": {"state": "DONE"}, "content": [text("ship")]}],
            },
            {"type": "panel", "attrs": {"panelType": "warning"}, "content": [para(text("Careful"))]},
            {"type": "blockquote", "content": [para(text("quoted"))]},
            {"type": "rule"},
            {
                "type": "table",
                "content": [
                    {
                        "type": "tableRow",
                        "content": [
                            {"type": "tableHeader", "content": [para(text("env"))]},
                            {"type": "tableHeader", "content": [para(text("status"))]},
                        ],
                    },
                    {
                        "type": "tableRow",
                        "content": [
                            {"type": "tableCell", "content": [para(text("prod"))]},
                            {"type": "tableCell", "content": [para({"type": "status", "attrs": {"text": "DOWN"}})]},
                        ],
                    },
                ],
            },
            para(
                {"type": "emoji", "attrs": {"shortName": ":fire:", "text": "🔥"}},
                text(" see "),
                {"type": "inlineCard", "attrs": {"url": "https://x.io/PROJ-9"}},
                text(" on "),
                {"type": "date", "attrs": {"timestamp": "1735689600000"}},
                text(" "),
                text("bold", {"type": "strong"}),
            ),
            {"type": "mediaSingle", "content": [{"type": "media", "attrs": {"type": "file", "alt": "trace.png"}}]},
            {"type": "someFutureNode", "content": [para(text("kept anyway"))]},
        )
    )
    assert rendered.split("\n\n") == [
        "### Cause",
        "- outer\n  - inner",
        "3. third",
        "- [x] ship",
        "Careful",
        "> quoted",
        "---",
        "| env | status |\n| prod | [DOWN] |",
        "🔥 see https://x.io/PROJ-9 on 2025-01-01 bold",
        "[attachment: trace.png]",
        "kept anyway",
    ]


def test_empty_and_plain_values() -> None:
    assert adf_to_text(None) == "" and adf_to_text("  plain  ") == "plain" and adf_to_text(doc()) == ""
