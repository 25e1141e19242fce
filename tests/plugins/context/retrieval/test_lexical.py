"""``BM25Field``: statistics count live documents only, however often documents are replaced."""

from __future__ import annotations

import pytest

from gateway_plugins.context.retrieval.lexical import BM25Field


def _field(versions: int) -> tuple[BM25Field, list[int]]:
    """Three documents, the first two replaced ``versions`` times (each version a new row, as re-indexing does)."""
    field, rows, row = BM25Field(), {}, 0
    for _ in range(versions + 1):
        for doc, tokens in (("a", ["bulk", "alpha"]), ("b", ["bulk", "beta"])):
            if doc in rows:
                field.remove(rows[doc])
            field.add(row, tokens)
            rows[doc], row = row, row + 1
    field.add(row, ["gamma"])
    return field, [rows["a"], rows["b"], row]


@pytest.mark.parametrize("versions", [1, 5, 50])
def test_replaced_documents_leave_idf_and_scores_as_a_fresh_index_has_them(versions: int) -> None:
    fresh, fresh_rows = _field(0)
    churned, rows = _field(versions)
    assert churned.document_frequency("bulk") == fresh.document_frequency("bulk") == 2
    assert churned.idf("bulk") == pytest.approx(fresh.idf("bulk")) and churned.idf("bulk") > 0
    scores = churned.scores({"bulk": 1.0}, rows[-1] + 1)
    assert scores[rows[0]] > 0 and scores[rows[1]] > 0 and scores[rows[2]] == 0
    assert scores[rows[0]] == pytest.approx(fresh.scores({"bulk": 1.0}, 3)[fresh_rows[0]])
    assert (scores > 0).sum() == 2  # the old versions never score
