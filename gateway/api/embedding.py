"""Embedder protocol, and the host's embedding service (the ordered embedder chain) as packs see it."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, runtime_checkable

import anyio.to_thread
import numpy as np
import structlog

from gateway.api.errors import ProviderUnavailable, ServiceUnavailable

log = structlog.get_logger(__name__)

EmbedTask = Literal["document", "query"]
"""``document`` for stored items (Gemini RETRIEVAL_DOCUMENT), ``query`` for searches (RETRIEVAL_QUERY)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised dense vectors.

    ``id`` is stable and names provider, model and dimension (``local/all-MiniLM-L6-v2/384``): vectors from two
    ids are never compared, and packs name their storage after the id, so two ids must differ in more than case
    or punctuation (the host refuses a chain where they do not). The host's chain checks every answer: a NaN,
    an infinite value or a zero vector counts as a failure of that embedder (the chain falls back), and a vector
    whose length is not 1 is normalised. ``max_batch`` and ``max_input_chars`` are the limits the embedder
    declares; callers may pass any number of texts (the embedder batches) and longer texts are truncated, never
    rejected.
    Failures of a remote service raise :class:`gateway.api.ProviderUnavailable`.
    """

    @property
    def id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_batch(self) -> int: ...

    @property
    def max_input_chars(self) -> int: ...

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class QueryEmbedding:
    """A query vector and the embedder that produced it (compare it only with that embedder's vectors)."""

    embedder_id: str
    vector: list[float]
    skipped: tuple[str, ...] = ()
    """Ids of embedders earlier in the chain that failed for this call."""


@dataclass(frozen=True)
class DocumentEmbeddings:
    """Vectors for a batch of documents, per embedder id, and which embedders failed (to fill in later)."""

    vectors: Mapping[str, list[list[float]]]
    missing: tuple[str, ...] = field(default=())


class EmbeddingService(Protocol):
    """The configured embedder chain (default ``["gemini", "local"]``), as a tool pack uses it.

    Documents get a vector from every available embedder of the chain (so the fallback index is always
    complete); a query is embedded by the first embedder that answers, passing over the ids in ``skip`` (a pack
    that knows an embedder lacks vectors for some of its items; the last link, the fallback, is never skipped).
    """

    @property
    def embedders(self) -> Sequence[Embedder]: ...

    async def embed_documents(self, texts: Sequence[str]) -> DocumentEmbeddings: ...

    async def embed_query(self, text: str, *, skip: Collection[str] = ()) -> QueryEmbedding: ...


async def embeddings_off_loop(embeddings: Callable[[], EmbeddingService]) -> EmbeddingService | None:
    """The embedder chain ``embeddings()`` builds, built on a worker thread. Building it loads the models (seconds
    the first time a local model's graph is built), which on the event loop would stall every other call of the
    gateway; a pack calls this from ``start()`` instead of building the chain at its first search. ``None``, logged,
    when the fallback embedder is unavailable: calls that embed then answer ``service_unavailable`` as they would
    have, and build the chain once it can be."""
    try:
        return await anyio.to_thread.run_sync(embeddings)
    except ServiceUnavailable as exc:
        log.warning("embedder chain unavailable at start", reason=exc.message)
        return None


_MIN_NORM = 1e-12
_NORM_TOLERANCE = 1e-3
"""Vectors whose length is further than this from 1 are normalised (the protocol asks for unit vectors; cosine
scores and stored vectors assume them)."""


def checked_vectors(embedder: Embedder, texts: Sequence[str], vectors: list[list[float]]) -> list[list[float]]:
    """``embedder``'s answer for ``texts``, L2-normalised, or :class:`ProviderUnavailable` for an answer that cannot be
    stored: the wrong count or dimension, a NaN or infinite value, a zero vector (it has no direction to compare).
    The host's chain checks every answer with it; a pack calling an embedder directly (a reindex) should too."""
    if len(vectors) != len(texts) or any(len(vector) != embedder.dimension for vector in vectors):
        raise ProviderUnavailable(
            embedder.id,
            f"answered {len(vectors)} vectors for {len(texts)} texts (want dimension {embedder.dimension})",
        )
    if not vectors:
        return vectors
    array = np.asarray(vectors, dtype=np.float64)
    if not np.isfinite(array).all():
        raise ProviderUnavailable(embedder.id, "answered a vector holding a NaN or infinite value")
    norms = np.linalg.norm(array, axis=1)
    if (norms < _MIN_NORM).any():
        raise ProviderUnavailable(embedder.id, "answered a zero vector")
    if (np.abs(norms - 1.0) <= _NORM_TOLERANCE).all():
        return vectors
    return (array / norms[:, None]).tolist()
