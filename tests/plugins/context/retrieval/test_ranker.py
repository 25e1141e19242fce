"""The ranking stages on a small in-memory index: each signal does what it claims."""

from __future__ import annotations

from gateway_plugins.context.chunking import chunk_file, language_of
from gateway_plugins.context.retrieval.ranker import Ranker, RankingOptions
from gateway_plugins.context.retrieval.search_index import ChunkEntry, FileEntry, SearchIndex
from gateway_plugins.context.tokens import tokenize

FILES = {
    "pkg/sessions.py": (
        "def should_set_cookie(app, session):\n"
        '    """Decide whether the session cookie is sent again on this response."""\n'
        "    return session.modified or app.config['SESSION_REFRESH_EACH_REQUEST']\n"
    ),
    "pkg/helpers.py": (
        "from .sessions import should_set_cookie\n\n"
        "def url_for(endpoint):\n    return '/' + endpoint\n\n"
        "def fail():\n"
        "    raise RuntimeError('The session is unavailable because no secret key was set.')\n"
    ),
    "tests/test_sessions.py": (
        "def test_session_cookie_sent_again_on_every_response():\n"
        "    # the session cookie is sent again on every response when refresh is on\n"
        "    assert 'The session is unavailable because no secret key was set.'\n"
    ),
    "docs/sessions.rst": "Sessions\n========\n\nThe session cookie is sent again on every response.\n",
}


def build() -> SearchIndex:
    index = SearchIndex()
    for n, (path, text) in enumerate(FILES.items()):
        chunked = chunk_file(path, text)
        entry = FileEntry(f"f{n}", "c", path, language_of(path), 0.0, tuple(chunked.imports))
        rows = [
            (
                ChunkEntry(f"f{n}:{i}", 0, c.kind, c.symbol, c.start_line, c.end_line, c.strings),
                tokenize(c.content) + tokenize(path),
            )
            for i, c in enumerate(chunked.chunks)
        ]
        index.add_file(entry, rows)
    return index


def top_path(index: SearchIndex, ranked: list) -> str:
    return index.files[index.chunks[ranked[0].row].file_row].path


def top_symbol(index: SearchIndex, ranked: list) -> str | None:
    return index.chunks[ranked[0].row].symbol


def test_priors_put_library_code_above_tests_and_docs() -> None:
    index = build()
    question = "why is the session cookie sent again on every response"
    plain = Ranker(index, RankingOptions(structural=False, messages=False, graph=False)).rank(question, limit=5)
    assert top_path(index, plain) != "pkg/sessions.py"  # tests and docs repeat the words more often
    ranked = Ranker(index).rank(question, limit=5)
    assert top_path(index, ranked) == "pkg/sessions.py"


def test_a_named_identifier_finds_its_definition() -> None:
    index = build()
    ranked = Ranker(index).rank("what does url_for return?", limit=3)
    assert top_symbol(index, ranked) == "url_for"


def test_a_pasted_error_finds_the_raise_site() -> None:
    index = build()
    ranked = Ranker(index).rank("RuntimeError: The session is unavailable because no secret key was set.", limit=3)
    assert top_symbol(index, ranked) == "fail"
    off = Ranker(index, RankingOptions(messages=False)).rank("RuntimeError: The session is unavailable", limit=3)
    assert off  # without the stage the question still answers, only the order may differ


def test_the_active_file_and_its_imports_are_favoured() -> None:
    index = build()
    helpers = index.file_by_path[("c", "pkg/helpers.py")]
    imports, importers = Ranker(index).graph.neighbours(helpers)
    assert [index.files[i].path for i in imports] == ["pkg/sessions.py"] and not importers
    docs = index.file_by_path[("c", "docs/sessions.rst")]
    sessions = index.file_by_path[("c", "pkg/sessions.py")]
    question = "cookie endpoint"  # one word each in sessions.py and helpers.py

    def ratio(active: int | None) -> float:
        """score of sessions.py's best chunk over helpers.py's"""
        best: dict[int, float] = {}
        for item in Ranker(index).rank(question, limit=10, active_file=active):
            file_row = index.chunks[item.row].file_row
            best.setdefault(file_row, item.score)
        return best[sessions] / best[helpers]

    assert ratio(sessions) > ratio(None) > ratio(helpers)
    # an importer's neighbour gets the smaller boost: unrelated files stay below it
    ranked = Ranker(index).rank("session", limit=10, active_file=helpers)
    paths = [index.files[index.chunks[r.row].file_row].path for r in ranked]
    assert paths.index("pkg/sessions.py") < paths.index(index.files[docs].path)


def test_removed_files_never_rank() -> None:
    index = build()
    index.remove_file("f0")
    ranked = Ranker(index).rank("session cookie sent again", limit=10)
    assert all(index.files[index.chunks[r.row].file_row].path != "pkg/sessions.py" for r in ranked)


def build_from(files: dict[str, str]) -> SearchIndex:
    index = SearchIndex()
    for n, (path, text) in enumerate(files.items()):
        chunked = chunk_file(path, text)
        entry = FileEntry(f"f{n}", "c", path, language_of(path), 0.0, tuple(chunked.imports))
        rows = [
            (
                ChunkEntry(f"f{n}:{i}", 0, c.kind, c.symbol, c.start_line, c.end_line, c.strings),
                tokenize(c.content) + tokenize(path),
            )
            for i, c in enumerate(chunked.chunks)
        ]
        index.add_file(entry, rows)
    return index


def test_a_pasted_error_of_a_project_exception_finds_the_raise_site_not_the_class() -> None:
    index = build_from(
        {
            "pkg/exceptions.py": (
                "class TemplateSyntaxError(Exception):\n"
                '    """Raised to tell the user that there is a problem with the template syntax."""\n'
            ),
            "pkg/parser.py": (
                "from .exceptions import TemplateSyntaxError\n\n"
                "def parse_block(stream):\n"
                "    if stream.current == '-':\n"
                "        raise TemplateSyntaxError(f'Block names may not contain hyphens, got {stream.name!r}.')\n"
            ),
        }
    )
    question = "pkg.exceptions.TemplateSyntaxError: Block names may not contain hyphens, got 'side-bar'."
    ranked = Ranker(index).rank(question, limit=3)
    assert top_symbol(index, ranked) == "parse_block"
    # the type's definition is still found, below the raise site
    assert "TemplateSyntaxError" in [index.chunks[r.row].symbol for r in ranked]


def test_an_exception_carrying_its_own_message_is_answered_by_where_it_is_raised() -> None:
    exceptions = (
        "class ParseError(ValueError):\n"
        "    def __init__(self, line, col, message=None):\n"
        "        super().__init__(f'{message} at line {line} col {col}')\n\n"
        "class EmptyTableNameError(ParseError):\n"
        "    def __init__(self, line, col):\n"
        "        super().__init__(line, col, message='Empty table name')\n"
    )
    parser = (
        "from .exceptions import EmptyTableNameError\n\n"
        "def parse_table(src):\n"
        "    name = src.read_name()\n"
        "    if not name:\n"
        "        raise src.parse_error(EmptyTableNameError)\n"
        "    return name\n\n"
        "def parse_key(src):\n"
        "    return src.read_name()\n"
    )
    question = "pkg.exceptions.EmptyTableNameError: Empty table name at line 7 col 1"
    index = build_from({"pkg/exceptions.py": exceptions, "pkg/parser.py": parser})
    ranked = Ranker(index).rank(question, limit=5)
    assert top_symbol(index, ranked) == "parse_table"
    # the class is still found; with nothing in the code raising it, its definition is the answer
    assert "EmptyTableNameError.__init__" in [index.chunks[r.row].symbol for r in ranked]
    alone = build_from({"pkg/exceptions.py": exceptions})
    ranked = Ranker(alone).rank(question, limit=5)
    assert top_symbol(alone, ranked) == "EmptyTableNameError.__init__"


def test_a_short_message_pasted_whole_finds_its_raise_site() -> None:
    index = build_from(
        {
            "lib/rule.js": (
                "class Rule {\n"
                "  parse (comp) {\n"
                "    const m = comp.match(this.re)\n"
                "    if (!m) {\n"
                "      throw new TypeError(`Invalid comparator: ${comp}`)\n"
                "    }\n"
                "  }\n"
                "}\n"
            ),
            "lib/comparator.js": (
                "function isInvalidComparator (comparator) {\n"
                "  // an invalid comparator is a comparator that never matches\n"
                "  return comparator.semver === ANY && comparator.operator === '<'\n"
                "}\n"
            ),
        }
    )
    pasted = "TypeError: Invalid comparator: >=1.2.3.4"
    ranked = Ranker(index).rank(pasted, limit=3)
    # the words alone favour the helper named after them; the message is the raise site's
    assert top_symbol(index, ranked) == "Rule.parse"
    # a line of prose that starts with a word and a colon is not a pasted error: two words are no quote there
    ranked = Ranker(index).rank("Question: invalid comparator checks?", limit=3)
    assert top_symbol(index, ranked) == "isInvalidComparator"
    # a line of prose above the pasted error leaves the error's message a quote: the raise site wins by the quote's
    # boost, not by the few words the exception type shares with it
    ranked = Ranker(index).rank("Context: an invalid comparator never matches\n" + pasted, limit=3)
    assert top_symbol(index, ranked) == "Rule.parse"
    assert ranked[0].score - ranked[1].score > 0.5


def test_type_declarations_rank_below_the_implementation() -> None:
    # the declaration restates the documentation at more length; the implementation is what the question is about
    index = build_from(
        {
            "types/index.d.ts": (
                "/**\n * Add a hook for an event: the hook callback runs before the action handler\n"
                " * of this command and before the action handler of its subcommands.\n */\n"
                "export function hook(event: string, listener: Function): void;\n"
            ),
            "lib/hooks.js": (
                "/**\n * Add a hook for an event: the callback runs before the action handler.\n */\n"
                "function hook(event, listener) {\n  hooks[event] = listener;\n}\n"
            ),
        }
    )
    ranked = Ranker(index).rank("which hook callbacks run for subcommands before the action handler?", limit=5)
    assert top_path(index, ranked) == "lib/hooks.js"


def test_a_dotted_name_falls_back_to_its_last_part_with_the_same_case() -> None:
    index = build_from(
        {
            "pkg/nodes.py": "class Name:\n    pass\n",
            "pkg/router.py": "class Router:\n    def use(self, fn):\n        return fn\n",
        }
    )
    # ``app.use`` is not defined as such: its last part finds ``Router.use`` ...
    assert [index.chunks[r].symbol for r in index.rows_with_symbol("app.use")] == ["Router.use"]
    # ... but an example value such as ``user.name`` is not the class ``Name`` (identifiers are case-sensitive)
    assert index.rows_with_symbol("user.name") == []


def test_a_question_pointing_at_the_open_file_favours_it_more() -> None:
    index = build()
    sessions = index.file_by_path[("c", "pkg/sessions.py")]

    def score_of_sessions(question: str) -> float:
        ranked = Ranker(index).rank(question, limit=10, active_file=sessions)
        return next(r.score for r in ranked if index.chunks[r.row].file_row == sessions)

    # "here" is a stop-word: the lexical score is the same, only the pointing differs
    plain = score_of_sessions("when is the session cookie sent again")
    assert score_of_sessions("when is the session cookie sent again here") > plain * 1.2


def test_an_exception_named_without_the_error_suffix_is_followed_to_its_raise_site() -> None:
    index = build_from(
        {
            "pkg/exc.py": (
                "class SignatureExpired(Exception):\n"
                "    def __init__(self, date):\n"
                "        super().__init__(f'Signature expired on {date}')\n"
            ),
            "pkg/timed.py": (
                "from .exc import SignatureExpired\n\n"
                "def check_age(stamp, max_age):\n"
                "    if stamp.age > max_age:\n"
                "        raise SignatureExpired(stamp.date)\n"
            ),
        }
    )
    ranked = Ranker(index).rank("pkg.exc.SignatureExpired: Signature expired on 2024-01-01", limit=3)
    assert top_symbol(index, ranked) == "check_age"


def test_a_question_about_where_the_open_files_definitions_are_used_favours_its_importers() -> None:
    index = build_from(
        {
            "pkg/exceptions.py": (
                "class InvalidNumberError(ValueError):\n"
                "    '''Raised when a number cannot be read while parsing a value.'''\n\n"
                "class InvalidDateError(ValueError):\n"
                "    '''Raised when a date cannot be read while parsing a value.'''\n"
            ),
            "pkg/parser.py": (
                "from .exceptions import InvalidNumberError\n\n"
                "def parse_value(src):\n"
                "    text = src.read_value()\n"
                "    if not text.isdigit():\n"
                "        raise InvalidNumberError(text)\n"
                "    return int(text)\n"
            ),
        }
    )
    exceptions = index.file_by_path[("c", "pkg/exceptions.py")]

    def top(question: str) -> str | None:
        return index.chunks[Ranker(index).rank(question, limit=3, active_file=exceptions)[0].row].symbol

    used = "where is the invalid number error defined in this module raised while parsing a value?"
    assert top(used) == "parse_value"
    # asked about the open file itself, the open file stays first
    described = "how is the invalid number error here raised while parsing a value described?"
    assert top(described) == "InvalidNumberError"
    extended = "what does the invalid number error defined in this module, raised while parsing a value, extend?"
    assert top(extended) == "InvalidNumberError"


def test_a_raise_site_that_carries_the_message_keeps_it() -> None:
    index = build_from(
        {
            "pkg/errors.py": (
                "class ConfigError(Exception):\n"
                "    def __init__(self, message='invalid configuration file'):\n"
                "        super().__init__(message)\n"
            ),
            "pkg/config.py": (
                "from .errors import ConfigError\n\n"
                "def load(path):\n"
                "    if not path.exists():\n"
                "        raise ConfigError(f'invalid configuration file {path}: no such file')\n\n"
                "def main(path):\n"
                "    try:\n"
                "        return load(path)\n"
                "    except ConfigError:\n"
                "        return None\n"
            ),
        }
    )
    ranked = Ranker(index).rank("pkg.errors.ConfigError: invalid configuration file app.toml: no such file", limit=3)
    scores = {index.chunks[r.row].symbol: r.score for r in ranked}
    assert {"load", "ConfigError.__init__"} <= set(scores)
    # the handler that merely names the exception gets no share of the definition's quote
    assert "main" not in scores or scores["main"] < scores["load"] / 2


def test_an_exception_named_by_one_word_is_left_alone() -> None:
    # "Gone" is also a word of the code: the chunks holding it are not its raise sites
    index = build_from(
        {
            "pkg/exceptions.py": (
                "class Gone(Exception):\n"
                "    def __init__(self):\n"
                "        super().__init__('The requested URL is no longer available on this server')\n"
            ),
            "pkg/pool.py": (
                "def release(conn):\n"
                "    # the server may be gone already: the connection is dropped, not returned\n"
                "    conn.close()\n"
            ),
        }
    )
    question = "pkg.exceptions.Gone: The requested URL is no longer available on this server"
    ranked = Ranker(index).rank(question, limit=3)
    assert top_symbol(index, ranked) == "Gone.__init__"
