"""The in-memory search index's fields: what each one rewards."""

from __future__ import annotations

from gateway_plugins.context.retrieval.search_index import ChunkEntry, FileEntry, SearchIndex


def test_content_length_normalisation_is_mild_for_long_functions() -> None:
    # a long central routine holding the question's words once keeps most of a short helper's score: function chunks
    # run from a few lines to hundreds, and the long ones are not verbose prose
    index = SearchIndex()
    long_body = ["glued", "flag"] + [f"step{i}" for i in range(400)]
    short_body = ["glued", "flag"] + [f"x{i}" for i in range(8)]
    entry = FileEntry("f", "c", "pkg/parser.py", "python", 0.0, ())
    index.add_file(
        entry,
        [
            (ChunkEntry("a", 0, "function", "parse", 1, 200, ()), long_body),
            (ChunkEntry("b", 0, "function", "helper", 201, 205, ()), short_body),
        ],
    )
    scores = index.content.scores({"glued": 1.0, "flag": 1.0}, index.size)
    assert scores[0] >= 0.5 * scores[1]
