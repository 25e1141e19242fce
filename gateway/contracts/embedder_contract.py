"""The contract every :class:`gateway.api.Embedder` keeps.

Subclass :class:`EmbedderContract` in a test module (name the subclass ``Test...``) and provide the
``embedder`` fixture: it returns (or yields, closing it afterwards) a ready embedder. Any scope works, so an
expensive model can be loaded once per module. A third-party plugin runs the same suite against its class::

    class TestMyEmbedderContract(EmbedderContract):
        @pytest.fixture
        async def embedder(self):
            embedder = MyEmbedder(...)
            yield embedder
            await embedder.aclose()

What the suite checks: the declared id, dimension and limits; unit-length vectors of the declared dimension;
one vector per text, in order, whatever the batch (a batch equals one-by-one within 1e-5, also past
``max_batch``); determinism; both tasks; long input truncated rather than rejected; an empty batch is ``[]``.
"""

from __future__ import annotations

import anyio
import numpy as np
import pytest

from gateway.api import Embedder

TOLERANCE = 1e-5
TEXTS = (
    "TypeError: 'NoneType' object is not subscriptable",
    "ModuleNotFoundError: No module named 'requests'",
    "ECONNREFUSED 127.0.0.1:5432 - is the PostgreSQL server running?",
    "How do I reset my password",
    "Ünïcödé, 日本語, emoji 🚀 and tabs\tin one line",
    "x",
)


def as_matrix(vectors: list[list[float]]) -> np.ndarray:
    return np.asarray(vectors, dtype=np.float64)


class EmbedderContract:
    """Inherit, provide the ``embedder`` fixture, and every test below runs against your embedder."""

    pytestmark = [pytest.mark.anyio]

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def embedder(self) -> Embedder:
        raise NotImplementedError("subclass EmbedderContract and provide the `embedder` fixture")

    # -- declarations ----------------------------------------------------------------------------------------

    async def test_satisfies_the_protocol(self, embedder: Embedder) -> None:
        assert isinstance(embedder, Embedder)

    async def test_id_is_stable_and_names_the_dimension(self, embedder: Embedder) -> None:
        assert isinstance(embedder.id, str) and embedder.id
        assert embedder.id == embedder.id
        assert embedder.id.endswith(f"/{embedder.dimension}"), "the id names provider, model and dimension"

    async def test_limits_are_positive(self, embedder: Embedder) -> None:
        assert isinstance(embedder.dimension, int) and embedder.dimension > 0
        assert isinstance(embedder.max_batch, int) and embedder.max_batch > 0
        assert isinstance(embedder.max_input_chars, int) and embedder.max_input_chars > 0

    # -- vectors ---------------------------------------------------------------------------------------------

    async def test_vectors_have_the_declared_dimension(self, embedder: Embedder) -> None:
        vectors = await embedder.embed(list(TEXTS), task="document")
        assert len(vectors) == len(TEXTS)
        assert all(len(vector) == embedder.dimension for vector in vectors)
        assert all(isinstance(value, float) for value in vectors[0])

    async def test_vectors_are_unit_length(self, embedder: Embedder) -> None:
        for task in ("document", "query"):
            norms = np.linalg.norm(as_matrix(await embedder.embed(list(TEXTS), task=task)), axis=1)
            assert np.allclose(norms, 1.0, atol=1e-4), norms

    async def test_both_tasks_work(self, embedder: Embedder) -> None:
        documents = as_matrix(await embedder.embed(list(TEXTS), task="document"))
        queries = as_matrix(await embedder.embed(list(TEXTS), task="query"))
        assert documents.shape == queries.shape == (len(TEXTS), embedder.dimension)
        # A query is closest to its own document, whatever the task asymmetry.
        assert (np.argmax(queries @ documents.T, axis=1) == np.arange(len(TEXTS))).all()

    async def test_distinct_texts_give_distinct_vectors(self, embedder: Embedder) -> None:
        vectors = as_matrix(await embedder.embed(list(TEXTS), task="document"))
        similarity = vectors @ vectors.T
        off_diagonal = similarity[~np.eye(len(TEXTS), dtype=bool)]
        assert off_diagonal.max() < 0.999

    async def test_deterministic(self, embedder: Embedder) -> None:
        first = as_matrix(await embedder.embed(list(TEXTS), task="document"))
        second = as_matrix(await embedder.embed(list(TEXTS), task="document"))
        assert np.abs(first - second).max() <= TOLERANCE

    async def test_batch_equals_one_by_one(self, embedder: Embedder) -> None:
        batch = as_matrix(await embedder.embed(list(TEXTS), task="document"))
        single = as_matrix([(await embedder.embed([text], task="document"))[0] for text in TEXTS])
        assert np.abs(batch - single).max() <= TOLERANCE

    async def test_more_texts_than_max_batch_keep_their_order(self, embedder: Embedder) -> None:
        texts = [f"{TEXTS[i % len(TEXTS)]} #{i}" for i in range(embedder.max_batch + 3)]
        vectors = as_matrix(await embedder.embed(texts, task="document"))
        assert vectors.shape == (len(texts), embedder.dimension)
        tail = as_matrix(await embedder.embed(texts[-3:], task="document"))
        assert np.abs(vectors[-3:] - tail).max() <= TOLERANCE

    async def test_concurrent_calls_match_sequential(self, embedder: Embedder) -> None:
        expected = as_matrix(await embedder.embed(list(TEXTS), task="query"))
        got: dict[int, list[list[float]]] = {}

        async def one(i: int) -> None:
            got[i] = await embedder.embed([TEXTS[i]], task="query")

        async with anyio.create_task_group() as group:
            for i in range(len(TEXTS)):
                group.start_soon(one, i)
        assert np.abs(as_matrix([got[i][0] for i in range(len(TEXTS))]) - expected).max() <= TOLERANCE

    # -- edges -----------------------------------------------------------------------------------------------

    async def test_empty_batch_returns_empty_list(self, embedder: Embedder) -> None:
        assert await embedder.embed([], task="document") == []
        assert await embedder.embed([], task="query") == []

    async def test_long_input_is_truncated_not_rejected(self, embedder: Embedder) -> None:
        words = "connection reset by peer while reading the response "
        long_text = words * (3 * embedder.max_input_chars // len(words) + 1)
        assert len(long_text) > 3 * embedder.max_input_chars
        (vector,) = await embedder.embed([long_text], task="document")
        assert len(vector) == embedder.dimension
        assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
        # Everything past the limit is ignored: a different tail does not change the vector.
        (other,) = await embedder.embed([long_text + " and a completely different ending"], task="document")
        assert np.abs(np.asarray(vector) - np.asarray(other)).max() <= TOLERANCE
