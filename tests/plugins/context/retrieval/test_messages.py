"""Quote matching of pasted error text against string literals, format placeholders included."""

from __future__ import annotations

from gateway_plugins.context.retrieval.messages import literal_of, query_text, quote_score
from gateway_plugins.context.tokens import error_head


def score(literal: str, question: str) -> float:
    """The score of ``literal`` for ``question``, prepared as the ranker prepares it (with a pasted error's message)."""
    prepared = literal_of(literal)
    assert prepared is not None
    head = error_head(question)
    return quote_score(prepared, query_text(question, head.message if head is not None else ""))


def test_a_short_message_with_a_filled_in_placeholder_is_quoted() -> None:
    # "No such command" is the whole fragment before the placeholder: quoted whole, it counts although it is short
    assert score("No such command {name!r}.", "Error: No such command 'statr'.") == 1.0
    assert score("Option %(name)s requires an argument.", "Error: Option '--name' requires an argument.") == 1.0
    # one fragment quoted whole, the other missing: the share of words quoted
    assert score("Option %(name)s requires an argument.", "why does it say requires an argument?") == 0.75
    assert score("error: unknown option '${flag}'${suggestion}", "error: unknown option '--verbos'") == 1.0
    assert score("%s is not a valid %s", "'abc' is not a valid integer") == 1.0


def test_placeholder_words_do_not_break_the_run() -> None:
    # without splitting, "name r" sits between "Option" and "requires" and no four-word run remains
    literal = "Option {name!r} requires an argument."
    assert score(literal, "Option '--name' requires an argument.") > 0.5


def test_a_paraphrase_sharing_a_few_words_is_not_a_quote() -> None:
    literal = "The session is unavailable because no secret key was set. Set the secret_key on the application."
    assert score(literal, "where is the session made unavailable when a key is missing?") == 0.0
    # a three-word run inside a longer fragment is not enough; four words are
    assert score(literal, "why is the secret key was checked") == 0.0
    assert score(literal, "because no secret key was") > 0.0


def test_a_literal_quoted_piece_by_piece_in_order_is_quoted_entirely() -> None:
    # each fragment is short, but the question holds all of them in order, values where the placeholders were
    assert score("block {name!r} defined twice", "TemplateAssertionError: block 'content' defined twice") == 1.0
    assert score("{obj!r} has no attribute {name!r}", "'dict object' has no attribute 'usernme'") == 1.0
    # out of order, or a fragment missing: no quote
    assert score("block {name!r} defined twice", "defined twice: block 'content'") == 0.0
    assert score("block {name!r} defined twice", "block 'content' defined") == 0.0


def test_a_literal_without_two_words_cannot_be_quoted() -> None:
    assert literal_of("{name}: {value}") is None
    assert literal_of("Invalid {what}") is None
    assert literal_of("utf8") is None


def test_a_two_word_literal_is_quoted_only_as_a_pasted_errors_whole_message() -> None:
    # the message is the literal, the value of its final placeholder filled in
    assert score("Invalid comparator: ${comp}", "TypeError: Invalid comparator: >=1.2.3.4") == 1.0
    assert score("timestamp missing", "itsdangerous.exc.BadTimeSignature: timestamp missing") == 1.0
    assert score("No {type} named {name}", "KeyError: No filter named 'upper2'") == 1.0
    # a leading placeholder: the value comes first
    assert score("{name} is required", "KeyError: 'port' is required") == 1.0
    assert score("%s not found", "LookupError: 'config.toml' not found") == 1.0
    assert score("{name} is required", "KeyError: 'port' is required here") == 0.0
    # the message goes on with words of its own: another message that happens to start alike
    assert score("utf-8", "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff") == 0.0
    assert score("timestamp missing", "BadTimeSignature: timestamp missing or malformed") == 0.0
    # not at the message's start, or not a pasted error at all: two words are a coincidence
    assert score("Invalid comparator: ${comp}", "ValueError: got an Invalid comparator: >=1") == 0.0
    assert score("Invalid comparator: ${comp}", "what makes an invalid comparator: >=1 here?") == 0.0


def test_a_long_message_pasted_in_part_counts_as_a_quote() -> None:
    literal = (
        "The setup method '{f_name}' can no longer be called on the application. It has already handled its first"
        " request, any changes will not be applied consistently. Make sure all imports, decorators, functions, etc."
        " needed to set up the application are done before running it."
    )
    question = "The setup method 'route' can no longer be called on the application. It has already handled its first"
    assert score(literal, question) >= 0.9
