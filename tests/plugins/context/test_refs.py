"""Ticket ids in prose, branch names and tool input, normalised to the forms connectors store as keys."""

from __future__ import annotations

import pytest

from gateway_plugins.context.refs import branch_ticket_ids, normalise, ticket_ids


def test_ids_in_prose() -> None:
    text = "PROJ-123: fix login (closes #42, see octo/shop#7 and GH-9); not proj-5, not &#39; or abc#1"
    assert ticket_ids(text) == ["PROJ-123", "#42", "octo/shop#7", "#9"]


@pytest.mark.parametrize(
    ("branch", "expected"),
    [
        ("feat/PROJ-123-new-feature", ["PROJ-123"]),
        ("feat/proj-123-login", ["PROJ-123"]),
        ("123-fix-login", ["#123"]),
        ("fix/issue-77", ["ISSUE-77", "#77"]),
        ("main", []),
    ],
)
def test_ids_in_branch_names(branch: str, expected: list[str]) -> None:
    assert branch_ticket_ids(branch) == expected


@pytest.mark.parametrize(
    ("given", "forms"),
    [
        ("proj-7", ["PROJ-7"]),
        ("42", ["#42"]),
        ("#42", ["#42"]),
        ("gh-42", ["#42"]),
        ("octo/shop#42", ["octo/shop#42", "#42"]),
        ("not a ticket", []),
    ],
)
def test_tool_input_is_normalised(given: str, forms: list[str]) -> None:
    assert normalise(given) == forms
