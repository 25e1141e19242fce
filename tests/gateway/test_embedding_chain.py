"""The embedder chain over the real embedders: gemini (through the SDK, against the fake API) then local. The chain
the host builds from configuration is in ``test_embedding_chain_config.py``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence

import anyio
import numpy as np
import pytest
from structlog.testing import capture_logs

from gateway.api import ConfigError, EmbedTask, ProviderUnavailable, ServiceUnavailable
from gateway.embedding_chain import EmbedderChain
from gateway_plugins.embedders.config import GeminiEmbedderConfig
from gateway_plugins.embedders.gemini import GeminiEmbedder
from gateway_plugins.embedders.local import LocalEmbedder
from tests.fakes.gemini import FakeGemini, FakeResponse, fake_embedding
from tests.gateway.embedding_chain_support import DIM, KEY

pytestmark = pytest.mark.anyio


class Clock:
    """A hand-driven monotonic clock for the circuit breaker."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder.load(cache_dir=tmp_path_factory.getbasetemp() / "local-embedder-cache")


@pytest.fixture
async def gemini(fake_gemini: FakeGemini) -> AsyncIterator[GeminiEmbedder]:
    embedder = GeminiEmbedder(
        GeminiEmbedderConfig(
            api_key=KEY,
            base_url=fake_gemini.base_url,
            output_dimensionality=DIM,
            timeout_seconds=0.5,
            max_retries=1,
            retry_initial_backoff_seconds=0.01,
            retry_max_backoff_seconds=0.02,
        )
    )
    yield embedder
    await embedder.aclose()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def chain(gemini: GeminiEmbedder, local: LocalEmbedder, clock: Clock) -> EmbedderChain:
    return EmbedderChain([("gemini", gemini), ("local", local)], retry_after_seconds=30, clock=clock)


def gemini_down(fake: FakeGemini, calls: int = 1) -> None:
    """Every attempt of ``calls`` embed calls answers 503 (max_retries=1: two attempts per call)."""
    fake.enqueue(*[FakeResponse(status=503)] * (2 * calls))


# -- queries -------------------------------------------------------------------------------------------------


async def test_query_is_served_by_the_first_embedder(chain: EmbedderChain, gemini: GeminiEmbedder) -> None:
    result = await chain.embed_query("TypeError: x is undefined")
    assert result.embedder_id == gemini.id
    assert result.skipped == ()
    assert np.allclose(result.vector, fake_embedding("TypeError: x is undefined", DIM), atol=1e-6)


async def test_query_falls_back_to_local_and_reports_gemini_skipped(
    chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder, fake_gemini: FakeGemini
) -> None:
    gemini_down(fake_gemini)
    result = await chain.embed_query("connection refused")
    assert result.embedder_id == local.id
    assert result.skipped == (gemini.id,)
    assert np.allclose(result.vector, local.embed_sync(["connection refused"])[0], atol=1e-6)
    assert len(fake_gemini.requests) == 2  # the retry happened before falling back


async def test_breaker_skips_a_failed_embedder_until_the_retry_time(
    chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder, fake_gemini: FakeGemini, clock: Clock
) -> None:
    gemini_down(fake_gemini)
    await chain.embed_query("first")
    requests_after_outage = len(fake_gemini.requests)

    clock.now += 29
    during = await chain.embed_query("second")
    assert (during.embedder_id, during.skipped) == (local.id, (gemini.id,))
    assert len(fake_gemini.requests) == requests_after_outage, "an open breaker sends nothing"
    documents = await chain.embed_documents(["third"])
    assert documents.missing == (gemini.id,)
    assert len(fake_gemini.requests) == requests_after_outage

    clock.now += 2
    after = await chain.embed_query("fourth")
    assert (after.embedder_id, after.skipped) == (gemini.id, ())
    assert len(fake_gemini.requests) == requests_after_outage + 1


async def test_a_failure_after_recovery_opens_the_breaker_again(
    chain: EmbedderChain, gemini: GeminiEmbedder, fake_gemini: FakeGemini, clock: Clock
) -> None:
    gemini_down(fake_gemini)
    await chain.embed_query("down")
    clock.now += 31
    assert (await chain.embed_query("up")).embedder_id == gemini.id
    gemini_down(fake_gemini)
    assert (await chain.embed_query("down again")).skipped == (gemini.id,)
    clock.now += 10
    assert (await chain.embed_query("still skipped")).skipped == (gemini.id,)


async def test_slow_gemini_does_not_hang_the_query(
    chain: EmbedderChain, local: LocalEmbedder, fake_gemini: FakeGemini
) -> None:
    fake_gemini.enqueue(FakeResponse(delay=60), FakeResponse(delay=60))
    started = time.monotonic()
    result = await chain.embed_query("slow network")
    assert result.embedder_id == local.id
    assert time.monotonic() - started < 5  # two 0.5 s attempts, then local


# -- documents -----------------------------------------------------------------------------------------------


async def test_documents_get_vectors_from_every_embedder(
    chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder, fake_gemini: FakeGemini
) -> None:
    texts = ["KeyError: 'id'", "ECONNRESET"]
    result = await chain.embed_documents(texts)
    assert result.missing == ()
    assert list(result.vectors) == [gemini.id, local.id]
    assert np.allclose(result.vectors[gemini.id], [fake_embedding(t, DIM) for t in texts], atol=1e-6)
    assert np.allclose(result.vectors[local.id], local.embed_sync(texts), atol=1e-6)
    (request,) = fake_gemini.requests
    assert [item["taskType"] for item in request.json["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2


async def test_documents_report_a_failed_embedder_as_missing(
    chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder, fake_gemini: FakeGemini
) -> None:
    gemini_down(fake_gemini)
    result = await chain.embed_documents(["one", "two"])
    assert result.missing == (gemini.id,)
    assert list(result.vectors) == [local.id]
    assert np.allclose(result.vectors[local.id], local.embed_sync(["one", "two"]), atol=1e-6)


async def test_empty_documents(chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder) -> None:
    result = await chain.embed_documents([])
    assert result.vectors == {gemini.id: [], local.id: []}
    assert result.missing == ()


# -- the fallback must succeed -------------------------------------------------------------------------------


async def test_failing_fallback_raises_service_unavailable(gemini: GeminiEmbedder, fake_gemini: FakeGemini) -> None:
    only_gemini = EmbedderChain([("gemini", gemini)])
    gemini_down(fake_gemini, calls=2)
    with pytest.raises(ServiceUnavailable) as caught:
        await only_gemini.embed_query("q")
    assert caught.value.code == "service_unavailable"
    with pytest.raises(ServiceUnavailable):
        await only_gemini.embed_documents(["d"])
    assert len(fake_gemini.requests) == 4, "the fallback is never skipped by the breaker"


class _Misreporting:
    """An embedder whose vectors do not have the dimension it declares."""

    def __init__(self, inner: LocalEmbedder, *, explode: bool = False) -> None:
        self._inner, self._explode = inner, explode
        self.id, self.dimension, self.max_batch, self.max_input_chars = "broken/model/999", 999, 8, 100

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        if self._explode:
            raise RuntimeError("a bug in the embedder")
        return await self._inner.embed(texts, task=task)

    async def aclose(self) -> None:
        pass


async def test_a_broken_answer_counts_as_a_failure(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("broken", _Misreporting(local)), ("local", local)])
    result = await chain.embed_query("q")
    assert (result.embedder_id, result.skipped) == (local.id, ("broken/model/999",))
    assert (await chain.embed_documents(["d"])).missing == ("broken/model/999",)


class _Distorting:
    """An embedder whose vectors are the local ones bent by ``distort`` (a NaN, a zero vector, a wrong length)."""

    def __init__(self, inner: LocalEmbedder, distort: str, embedder_id: str = "distorting/model/384") -> None:
        self._inner, self._distort = inner, distort
        self.id, self.dimension, self.max_batch, self.max_input_chars = embedder_id, inner.dimension, 8, 100

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        vectors = await self._inner.embed(texts, task=task)
        if self._distort == "nan":
            vectors[-1][3] = float("nan")
        elif self._distort == "inf":
            vectors[0][0] = float("inf")
        elif self._distort == "zero":
            vectors[0] = [0.0] * self.dimension
        elif self._distort == "scaled":
            vectors = [[3.0 * x for x in vector] for vector in vectors]
        return vectors

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("distort", ["nan", "inf", "zero"])
async def test_vectors_that_cannot_be_compared_count_as_a_failure(local: LocalEmbedder, distort: str) -> None:
    chain = EmbedderChain([("distorting", _Distorting(local, distort)), ("local", local)])
    with capture_logs() as logs:
        result = await chain.embed_query("q")
        documents = await chain.embed_documents(["d", "e"])
    assert (result.embedder_id, result.skipped) == (local.id, ("distorting/model/384",))
    assert documents.missing == ("distorting/model/384",) and list(documents.vectors) == [local.id]
    reasons = [entry["reason"] for entry in logs if entry["event"] == "embedder.skipped"]
    assert ("NaN or infinite" if distort != "zero" else "zero vector") in reasons[0]  # then its breaker is open


async def test_a_fallback_answering_nan_is_a_clear_outage(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("distorting", _Distorting(local, "nan"))])
    with pytest.raises(ServiceUnavailable, match="NaN or infinite"):
        await chain.embed_documents(["d"])


async def test_vectors_of_the_wrong_length_are_normalised(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("scaled", _Distorting(local, "scaled"))])
    served = (await chain.embed_documents(["d", "e"])).vectors["distorting/model/384"]
    expected = await local.embed(["d", "e"], task="document")
    assert np.allclose(np.linalg.norm(np.asarray(served), axis=1), 1.0)
    assert np.allclose(served, expected, atol=1e-6)


def test_ids_that_would_share_a_collection_are_a_config_error(local: LocalEmbedder) -> None:
    first, second = _Distorting(local, "", "acme/sha/64"), _Distorting(local, "", "ACME-sha/64")
    with pytest.raises(ConfigError, match="differ only in case or punctuation"):
        EmbedderChain([("first", first), ("second", second)])


async def test_a_bug_in_an_earlier_link_falls_back(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("buggy", _Misreporting(local, explode=True)), ("local", local)])
    with capture_logs() as logs:
        assert (await chain.embed_query("q")).embedder_id == local.id
    assert any(entry["event"] == "embedder.failed" for entry in logs)


async def test_a_bug_in_the_fallback_surfaces_unwrapped(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("local", local), ("buggy", _Misreporting(local, explode=True))])
    with pytest.raises(RuntimeError, match="a bug"):
        await chain.embed_documents(["d"])


# -- construction --------------------------------------------------------------------------------------------


async def test_unbuildable_links_are_left_out(local: LocalEmbedder) -> None:
    chain = EmbedderChain([("gemini", ProviderUnavailable("gemini", "no API key")), ("local", local)])
    assert chain.embedders == (local,)
    result = await chain.embed_query("q")
    assert (result.embedder_id, result.skipped) == (local.id, ())


async def test_an_unbuildable_fallback_is_a_service_outage(gemini: GeminiEmbedder) -> None:
    with pytest.raises(ServiceUnavailable, match="model package"):
        EmbedderChain([("gemini", gemini), ("local", ProviderUnavailable("local", "the model package is missing"))])


@pytest.mark.parametrize(
    "entries", [[], "duplicate-names", "duplicate-ids"], ids=["empty", "duplicate-names", "duplicate-ids"]
)
def test_invalid_chains_are_config_errors(local: LocalEmbedder, entries: object) -> None:
    if entries == "duplicate-names":
        entries = [("local", local), ("local", local)]
    elif entries == "duplicate-ids":
        entries = [("local", local), ("local-again", local)]
    with pytest.raises(ConfigError):
        EmbedderChain(entries)  # type: ignore[arg-type]


# -- logging -------------------------------------------------------------------------------------------------


async def test_logs_say_who_served_and_why_one_was_skipped_but_never_the_key(
    chain: EmbedderChain, gemini: GeminiEmbedder, local: LocalEmbedder, fake_gemini: FakeGemini
) -> None:
    gemini_down(fake_gemini)
    with capture_logs() as logs:
        await chain.embed_query("q")
    skipped = [entry for entry in logs if entry["event"] == "embedder.skipped"]
    assert skipped and skipped[0]["embedder"] == gemini.id and "503" in skipped[0]["reason"]
    assert skipped[0]["log_level"] == "warning"
    served = [entry for entry in logs if entry["event"] == "embedding.query"]
    assert served and served[0]["served_by"] == local.id and served[0]["skipped"] == [gemini.id]
    assert KEY not in repr(logs)


class _Stalled:
    """An embedder that never answers (a service that accepted the connection and went quiet)."""

    dimension = 384
    max_batch = 8
    max_input_chars = 1000

    def __init__(self, embedder_id: str) -> None:
        self.id = embedder_id

    async def embed(self, texts: Sequence[str], *, task: EmbedTask) -> list[list[float]]:
        await anyio.sleep(3600)
        return []

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_a_slow_first_link_is_abandoned_at_the_query_deadline_and_after_the_document_grace():
    local = LocalEmbedder.load()
    chain = EmbedderChain([("slow", _Stalled("slow/model/384")), ("local", local)], query_deadline_seconds=0.2)
    with anyio.fail_after(10):
        result = await chain.embed_query("ModuleNotFoundError: No module named 'numpy'")
    assert result.embedder_id == local.id and result.skipped == ("slow/model/384",)
    chain = EmbedderChain([("slow", _Stalled("slow/model/384")), ("local", local)], document_grace_seconds=0.3)
    started = anyio.current_time()
    with anyio.fail_after(10):  # documents go on with the fallback's vectors; the slow link's are filled in later
        documents = await chain.embed_documents(["ModuleNotFoundError: No module named 'numpy'"])
    assert anyio.current_time() - started < 5
    assert list(documents.vectors) == [local.id] and documents.missing == ("slow/model/384",)


async def test_a_fallback_that_hangs_fails_the_call_at_its_deadline(local: LocalEmbedder) -> None:
    deadlines = {"query": 0.2, "document": 0.3}
    chain = EmbedderChain([("local", local), ("hung", _Stalled("hung/model/384"))], fallback_deadline_seconds=deadlines)
    with anyio.fail_after(10), pytest.raises(ServiceUnavailable, match=r"query deadline of 0\.2s") as query:
        await chain.embed_query("ModuleNotFoundError: No module named 'numpy'", skip=[local.id])
    assert query.value.details == {"embedder": "hung/model/384"}
    with anyio.fail_after(10), pytest.raises(ServiceUnavailable, match=r"document deadline of 0\.3s"):
        await chain.embed_documents(["ModuleNotFoundError: No module named 'numpy'"])
