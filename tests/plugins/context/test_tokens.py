"""Identifier-aware tokens: whole identifiers and their snake/camel parts, stemmed; identifiers a question names."""

from __future__ import annotations

from gateway_plugins.context.tokens import error_head, identifier_parts, query_identifiers, tokenize


def test_identifiers_are_kept_whole_and_split() -> None:
    tokens = tokenize("_send_handling_redirects parseURLString")
    assert "send_handling_redirects" in tokens and {"send", "handl", "redirect"} <= set(tokens)
    assert {"parseurlstr", "pars", "url", "string"} <= set(tokens)
    assert identifier_parts("HTTPServerError") == ("HTTP", "Server", "Error")


def test_stemming_meets_question_words_and_code_words() -> None:
    assert set(tokenize("templates")) == set(tokenize("templating"))
    assert "the" not in tokenize("where is the cookie signed", drop_stopwords=True)


def test_query_identifiers() -> None:
    found = query_identifiers("What happens in url_for if I pass _scheme? Does Blueprint.register or app.use() run?")
    assert {"url_for", "_scheme", "Blueprint.register", "app.use"} <= set(found)
    assert query_identifiers("Where are settings read from the environment?") == []
    assert "context.What" not in query_identifiers("outside of application context.What raises this")


def test_error_head_is_the_exception_type_of_a_pasted_error() -> None:
    head = error_head("jinja2.exceptions.TemplateSyntaxError: unexpected end of template")
    assert head is not None
    assert (head.qualified, head.name, head.module) == (
        "jinja2.exceptions.TemplateSyntaxError",
        "TemplateSyntaxError",
        "jinja2.exceptions",
    )
    assert error_head("Error: No such command 'statr'.").name == "Error"  # type: ignore[union-attr]
    assert error_head("Traceback (most recent call last):\n  ...\nKeyError: 'x'").name == "KeyError"  # type: ignore[union-attr]
    assert error_head("How does Text.truncate shorten text: with an ellipsis?") is None
    assert error_head("where is url_for: defined?") is None  # not capitalised: not an exception type


def test_a_line_of_prose_above_a_pasted_error_does_not_hide_it() -> None:
    head = error_head("Context: loading the settings file\nValueError: Invalid value for port: 'abc'")
    assert head is not None
    assert (head.name, head.message) == ("ValueError", "Invalid value for port: 'abc'")
    # with no line that reads as an exception type, the first ``Name:`` line still heads the question
    assert error_head("Note: this fails\nSee: the log").name == "Note"  # type: ignore[union-attr]


def test_british_spellings_meet_the_american_ones_in_code() -> None:
    for british, american in [
        ("colours", "colors"),
        ("normalise", "normalize"),
        ("initialisation", "initialization"),
        ("behaviour", "behavior"),
        ("centre", "center"),
        ("grey", "gray"),
        ("licence", "license"),
    ]:
        assert tokenize(british) == tokenize(american), british
    # words that only look like them keep their own stems
    for word in ("raise", "promise", "hour", "your", "otherwise", "four"):
        assert tokenize(word) != tokenize(word.replace("ise", "ize").replace("our", "or")), word
