"""Suggestion matching on a vocabulary: whole-entry prefixes first, then prefixes of a part, then fuzzy matches that
are at least as long as the query; shorter entries first within a group."""

from __future__ import annotations

from gateway_plugins.context.suggestions import Vocabulary

VOCABULARY = Vocabulary.of(
    [
        "flask/app.py",
        "Flask.handle_user_exception",
        "handle_exception",
        "Handling errors",
        "url_for",
        "flask/helpers.py",
        "Blueprint.register",
        "register_error_handler",
        "url_for",  # duplicates are one entry
    ]
)


def test_whole_prefixes_then_parts_then_fuzzy() -> None:
    assert VOCABULARY.match("handl", 10) == [
        "Handling errors",  # the entry starts with it (the shorter first)
        "handle_exception",
        "Flask.handle_user_exception",  # a part starts with it
        "register_error_handler",  # fuzzy: close to a stretch of a longer entry
    ]
    assert VOCABULARY.match("handl", 2) == ["Handling errors", "handle_exception"]
    assert VOCABULARY.match("register", 5) == ["register_error_handler", "Blueprint.register"]


def test_separators_and_case_do_not_matter() -> None:
    assert VOCABULARY.match("URL FOR", 5) == ["url_for"]
    assert VOCABULARY.match("handle user", 5)[0] == "Flask.handle_user_exception"
    assert VOCABULARY.match("helpers", 5)[0] == "flask/helpers.py"


def test_a_typo_still_finds_the_entry_but_short_entries_inside_the_query_do_not_come() -> None:
    assert VOCABULARY.match("blueprnt", 5)[0] == "Blueprint.register"
    assert "url_for" not in VOCABULARY.match("url_for_everything", 5)
    assert VOCABULARY.match("zzzz", 5) == [] and VOCABULARY.match("  ", 5) == []
    assert Vocabulary.of([]).match("x", 5) == []
