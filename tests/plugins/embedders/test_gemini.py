"""The ``gemini`` embedder, through the real google-genai SDK, against the local fake of the Gemini REST API."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import numpy as np
import pytest
from pydantic import ValidationError
from structlog.testing import capture_logs

from gateway.api import Embedder, ProviderUnavailable
from gateway.contracts.embedder_contract import EmbedderContract
from gateway_plugins.embedders.config import GeminiEmbedderConfig
from gateway_plugins.embedders.gemini import GeminiEmbedder
from tests.fakes.gemini import FakeGemini, FakeResponse, fake_embedding

pytestmark = pytest.mark.anyio
KEY = "test-key-0123456789"
DIM = 768


def config_for(fake: FakeGemini, **overrides: object) -> GeminiEmbedderConfig:
    settings: dict[str, object] = {
        "api_key": KEY,
        "base_url": fake.base_url,
        "output_dimensionality": DIM,
        "timeout_seconds": 2.0,
        "max_retries": 2,
        "retry_initial_backoff_seconds": 0.01,
        "retry_max_backoff_seconds": 0.05,
    }
    settings.update(overrides)
    return GeminiEmbedderConfig.model_validate(settings)


@pytest.fixture
async def gemini(fake_gemini: FakeGemini) -> AsyncIterator[GeminiEmbedder]:
    embedder = GeminiEmbedder(config_for(fake_gemini))
    yield embedder
    await embedder.aclose()


class TestGeminiEmbedderContract(EmbedderContract):
    @pytest.fixture
    async def embedder(self, fake_gemini: FakeGemini) -> AsyncIterator[Embedder]:
        embedder = GeminiEmbedder(config_for(fake_gemini))
        yield embedder
        await embedder.aclose()


def embedded_texts(fake: FakeGemini) -> list[str]:
    return [item["content"]["parts"][0]["text"] for r in fake.requests for item in r.json["requests"]]


# -- success -------------------------------------------------------------------------------------------------


async def test_documents_and_queries_reach_the_api_as_the_sdk_sends_them(
    gemini: GeminiEmbedder, fake_gemini: FakeGemini
) -> None:
    texts = ["TypeError: x is undefined", "KeyError: 'id'"]
    documents = await gemini.embed(texts, task="document")
    (query,) = await gemini.embed(["undefined x"], task="query")

    first, second = fake_gemini.requests
    assert first.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert first.headers["x-goog-api-key"] == KEY
    assert [item["taskType"] for item in first.json["requests"]] == ["RETRIEVAL_DOCUMENT"] * 2
    assert [item["taskType"] for item in second.json["requests"]] == ["RETRIEVAL_QUERY"]
    assert {item["outputDimensionality"] for item in first.json["requests"]} == {DIM}
    assert {item["model"] for item in first.json["requests"]} == {"models/gemini-embedding-001"}
    assert embedded_texts(fake_gemini) == [*texts, "undefined x"]
    assert np.allclose(documents, [fake_embedding(text, DIM) for text in texts], atol=1e-6)
    assert np.allclose(query, fake_embedding("undefined x", DIM), atol=1e-6)


async def test_default_is_the_full_3072_dimensions(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(GeminiEmbedderConfig(api_key=KEY, base_url=fake_gemini.base_url))
    try:
        (vector,) = await embedder.embed(["hello"], task="document")
    finally:
        await embedder.aclose()
    assert embedder.id == "gemini/gemini-embedding-001/3072"
    assert len(vector) == embedder.dimension == 3072


async def test_texts_are_sent_in_batches_of_at_most_batch_size(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(config_for(fake_gemini, batch_size=40))
    texts = [f"error number {i}" for i in range(90)]
    try:
        vectors = await embedder.embed(texts, task="document")
    finally:
        await embedder.aclose()
    assert [len(r.json["requests"]) for r in fake_gemini.requests] == [40, 40, 10]
    assert embedded_texts(fake_gemini) == texts
    assert np.allclose(vectors[57], fake_embedding("error number 57", DIM), atol=1e-6)


async def test_vectors_are_normalised(gemini: GeminiEmbedder, fake_gemini: FakeGemini) -> None:
    raw = np.arange(1, DIM + 1, dtype=np.float64)  # Matryoshka-truncated vectors are not unit length
    fake_gemini.enqueue(FakeResponse(json={"embeddings": [{"values": raw.tolist()}]}))
    (vector,) = await gemini.embed(["x"], task="document")
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-9)
    assert np.allclose(vector, raw / np.linalg.norm(raw))


async def test_long_texts_are_cut_before_sending(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(config_for(fake_gemini, max_input_chars=100))
    try:
        await embedder.embed(["a" * 5000], task="document")
    finally:
        await embedder.aclose()
    assert embedded_texts(fake_gemini) == ["a" * 100]


async def test_empty_batch_sends_nothing(gemini: GeminiEmbedder, fake_gemini: FakeGemini) -> None:
    assert await gemini.embed([], task="query") == []
    assert fake_gemini.requests == []


async def test_a_single_string_is_refused(gemini: GeminiEmbedder) -> None:
    with pytest.raises(TypeError):
        await gemini.embed("one string", task="document")  # type: ignore[arg-type]


# -- retries -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [408, 429, 500, 502, 503, 504])
async def test_transient_failure_is_retried(gemini: GeminiEmbedder, fake_gemini: FakeGemini, status: int) -> None:
    fake_gemini.enqueue(FakeResponse(status=status))
    (vector,) = await gemini.embed(["retry me"], task="document")
    assert len(fake_gemini.requests) == 2
    assert fake_gemini.requests[0].json == fake_gemini.requests[1].json
    assert np.allclose(vector, fake_embedding("retry me", DIM), atol=1e-6)


async def test_a_proxys_error_page_is_retried_like_the_services_own_error(
    gemini: GeminiEmbedder, fake_gemini: FakeGemini
) -> None:
    page = "<html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"
    fake_gemini.enqueue(FakeResponse(status=502, raw_body=page, media_type="text/html"))
    (vector,) = await gemini.embed(["retry me"], task="document")
    assert len(fake_gemini.requests) == 2
    assert np.allclose(vector, fake_embedding("retry me", DIM), atol=1e-6)


async def test_429_then_success_waits_the_server_retry_delay(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(config_for(fake_gemini, retry_max_backoff_seconds=2.0))
    body = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
            "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.4s"}],
        }
    }
    fake_gemini.enqueue(FakeResponse(status=429, json=body))
    started = time.monotonic()
    try:
        await embedder.embed(["quota"], task="query")
    finally:
        await embedder.aclose()
    assert len(fake_gemini.requests) == 2
    assert time.monotonic() - started >= 0.4


async def test_persistent_5xx_raises_provider_unavailable(gemini: GeminiEmbedder, fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(*[FakeResponse(status=503)] * 3)
    with pytest.raises(ProviderUnavailable) as caught:
        await gemini.embed(["down"], task="document")
    assert len(fake_gemini.requests) == 3  # the first attempt and max_retries=2 retries
    assert caught.value.provider == "gemini"
    assert "503" in caught.value.reason and "3 attempt" in caught.value.reason


@pytest.mark.parametrize("status", [400, 401, 403, 404])
async def test_other_4xx_is_not_retried(gemini: GeminiEmbedder, fake_gemini: FakeGemini, status: int) -> None:
    fake_gemini.enqueue(FakeResponse(status=status))
    with pytest.raises(ProviderUnavailable, match=str(status)):
        await gemini.embed(["bad"], task="document")
    assert len(fake_gemini.requests) == 1


async def test_slow_server_times_out_instead_of_hanging(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(config_for(fake_gemini, timeout_seconds=0.3, max_retries=1))
    fake_gemini.enqueue(FakeResponse(delay=30), FakeResponse(delay=30))
    started = time.monotonic()
    try:
        with pytest.raises(ProviderUnavailable, match=r"timed out|Timeout"):
            await embedder.embed(["slow"], task="query")
    finally:
        await embedder.aclose()
    assert time.monotonic() - started < 5
    assert len(fake_gemini.requests) == 2


async def test_slow_first_attempt_then_success(fake_gemini: FakeGemini) -> None:
    gemini_fast = GeminiEmbedder(config_for(fake_gemini, timeout_seconds=0.3))
    fake_gemini.enqueue(FakeResponse(delay=30))
    try:
        (vector,) = await gemini_fast.embed(["eventually"], task="query")
    finally:
        await gemini_fast.aclose()
    assert len(fake_gemini.requests) == 2
    assert np.allclose(vector, fake_embedding("eventually", DIM), atol=1e-6)


async def test_unreachable_server_is_unavailable(fake_gemini: FakeGemini) -> None:
    embedder = GeminiEmbedder(config_for(fake_gemini, max_retries=1))
    fake_gemini.stop()  # nothing listens on the port any more
    try:
        with pytest.raises(ProviderUnavailable, match="2 attempt"):
            await embedder.embed(["anyone there?"], task="query")
    finally:
        await embedder.aclose()


# -- malformed answers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "response",
    [
        FakeResponse(json={"embeddings": []}),
        FakeResponse(json={"embeddings": [{"values": [0.1, 0.2]}]}),
        FakeResponse(json={"embeddings": [{"values": [0.0] * DIM}]}),
        FakeResponse(json={"embeddings": [{"values": [1.0] * DIM}, {"values": [1.0] * DIM}]}),
        FakeResponse(raw_body="<html>bad gateway</html>"),
    ],
    ids=["none", "short", "zero", "too-many", "not-json"],
)
async def test_malformed_answer_is_unavailable_without_retry(
    gemini: GeminiEmbedder, fake_gemini: FakeGemini, response: FakeResponse
) -> None:
    fake_gemini.enqueue(response)
    with pytest.raises(ProviderUnavailable, match="malformed"):
        await gemini.embed(["x"], task="document")
    assert len(fake_gemini.requests) == 1


# -- configuration and secrets -------------------------------------------------------------------------------


def test_no_key_means_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    config = GeminiEmbedderConfig.model_validate({"api_key": {"env": "GEMINI_API_KEY"}})
    assert config.api_key is None
    with pytest.raises(ProviderUnavailable, match="GEMINI_API_KEY") as caught:
        GeminiEmbedder(config)
    assert caught.value.provider == "gemini"


async def test_key_comes_from_the_environment(fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "from-the-env")
    config = GeminiEmbedderConfig.model_validate(
        {"api_key": {"env": "GEMINI_API_KEY"}, "base_url": fake_gemini.base_url, "output_dimensionality": 8}
    )
    assert "from-the-env" not in repr(config)
    embedder = GeminiEmbedder(config)
    try:
        await embedder.embed(["hi"], task="query")
    finally:
        await embedder.aclose()
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == "from-the-env"


async def test_the_key_never_reaches_logs_or_errors(gemini: GeminiEmbedder, fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(*[FakeResponse(status=500)] * 3)
    with capture_logs() as logs, pytest.raises(ProviderUnavailable) as caught:
        await gemini.embed(["x"], task="document")
    assert [entry["event"] for entry in logs] == ["embedder.gemini.retry"] * 2
    assert KEY not in repr(logs) and KEY not in str(caught.value)


@pytest.mark.parametrize(
    "settings",
    [
        {"base_url": "ftp://example"},
        {"batch_size": 101},
        {"output_dimensionality": 0},
        {"timeout_seconds": 0},
        {"unknown": 1},
        {"api_key": {"env": "A", "other": "B"}},
    ],
)
def test_invalid_config_is_rejected(settings: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        GeminiEmbedderConfig.model_validate(settings)
