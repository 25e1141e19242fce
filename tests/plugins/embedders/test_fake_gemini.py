"""The fake Gemini server answers the real google-genai SDK the way the Gemini REST API does."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest
from google import genai
from google.genai import errors, types

from tests.fakes.gemini import FakeGemini, FakeResponse, fake_embedding

try:  # the SDK sends through httpx2 when it is installed
    import httpx2

    TIMEOUTS: tuple[type[Exception], ...] = (httpx.TimeoutException, httpx2.TimeoutException)
except ImportError:  # pragma: no cover
    TIMEOUTS = (httpx.TimeoutException,)


def client_for(fake: FakeGemini, **http: object) -> genai.Client:
    return genai.Client(
        api_key="test-key", vertexai=False, http_options=types.HttpOptions(base_url=fake.base_url, **http)
    )


def test_embed_content_through_the_sdk(fake_gemini: FakeGemini) -> None:
    client = client_for(fake_gemini)
    response = client.models.embed_content(
        model="gemini-embedding-001",
        contents=["hello world", "goodbye"],
        config=types.EmbedContentConfig(task_type="RETRIEVAL_DOCUMENT", output_dimensionality=64),
    )
    vectors = [e.values for e in response.embeddings or []]
    assert np.allclose(vectors, [fake_embedding("hello world", 64), fake_embedding("goodbye", 64)])
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    (request,) = fake_gemini.requests_for("batchEmbedContents")
    assert request.headers["x-goog-api-key"] == "test-key"
    assert request.json["requests"][0]["taskType"] == "RETRIEVAL_DOCUMENT"


def test_default_dimension_is_3072(fake_gemini: FakeGemini) -> None:
    client = client_for(fake_gemini)
    response = client.models.embed_content(model="gemini-embedding-001", contents="x")
    assert len((response.embeddings or [])[0].values or []) == 3072


def test_embeddings_are_deterministic_and_share_words(fake_gemini: FakeGemini) -> None:
    a, b, c, again = (
        np.asarray(fake_embedding(text, 256))
        for text in ("database connection refused", "connection refused by database", "sunny beach", "sunny beach")
    )
    assert np.array_equal(c, again)
    assert a @ b > 0.6 > abs(a @ c)


def test_embed_content_single_endpoint(fake_gemini: FakeGemini) -> None:
    """The REST method the SDK does not use in Developer API mode, for other clients."""
    body = {"content": {"parts": [{"text": "single"}]}, "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 16}
    response = httpx.post(
        f"{fake_gemini.base_url}/v1beta/models/gemini-embedding-001:embedContent",
        json=body,
        headers={"x-goog-api-key": "k"},
    )
    assert response.status_code == 200
    assert np.allclose(response.json()["embedding"]["values"], fake_embedding("single", 16))


def test_generate_content_uses_generate_text(fake_gemini: FakeGemini) -> None:
    seen: list[dict] = []  # type: ignore[type-arg]

    def answer(request: dict) -> str:  # type: ignore[type-arg]
        seen.append(request)
        return json.dumps({"verdict": "ok"})

    fake_gemini.generate_text = answer
    client = client_for(fake_gemini)
    response = client.models.generate_content(
        model="gemini-2.5-flash",
        contents="judge this",
        config=types.GenerateContentConfig(system_instruction="be strict", temperature=0),
    )
    assert json.loads(response.text or "") == {"verdict": "ok"}
    assert seen[0]["contents"][0]["parts"][0]["text"] == "judge this"
    assert seen[0]["systemInstruction"]["parts"][0]["text"] == "be strict"
    assert fake_gemini.requests[0].path.endswith("/models/gemini-2.5-flash:generateContent")


def test_generate_content_echoes_by_default(fake_gemini: FakeGemini) -> None:
    client = client_for(fake_gemini)
    assert client.models.generate_content(model="m", contents="echo me").text == "echo me"


@pytest.mark.anyio
async def test_async_sdk_and_streaming(fake_gemini: FakeGemini) -> None:
    client = client_for(fake_gemini)
    try:
        chunks = [c.text async for c in await client.aio.models.generate_content_stream(model="m", contents="hi")]
        embedded = await client.aio.models.embed_content(model="gemini-embedding-001", contents="x")
    finally:
        await client.aio.aclose()
    assert chunks == ["hi"]
    assert len((embedded.embeddings or [])[0].values or []) == 3072


@pytest.mark.parametrize(("status", "error"), [(429, errors.ClientError), (503, errors.ServerError)])
def test_scripted_errors_reach_the_sdk_as_api_errors(
    fake_gemini: FakeGemini, status: int, error: type[errors.APIError]
) -> None:
    fake_gemini.enqueue(FakeResponse(status=status))
    client = client_for(fake_gemini)
    with pytest.raises(error) as caught:
        client.models.embed_content(model="gemini-embedding-001", contents="x")
    assert caught.value.code == status
    assert caught.value.status in {"RESOURCE_EXHAUSTED", "UNAVAILABLE"}
    # The queue is consumed: the next request gets the default answer.
    client.models.embed_content(model="gemini-embedding-001", contents="x")
    assert len(fake_gemini.requests) == 2


def test_scripted_json_and_raw_bodies(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(
        FakeResponse(json={"candidates": [{"content": {"role": "model", "parts": [{"text": "scripted"}]}}]}),
        FakeResponse(status=500, raw_body="<html>oops</html>"),
    )
    client = client_for(fake_gemini)
    assert client.models.generate_content(model="m", contents="x").text == "scripted"
    with pytest.raises(errors.ServerError):
        client.models.generate_content(model="m", contents="x")


def test_delay_makes_the_client_time_out(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(FakeResponse(delay=30))
    started = time.monotonic()
    client = client_for(fake_gemini, timeout=300)
    with pytest.raises(TIMEOUTS):
        client.models.embed_content(model="gemini-embedding-001", contents="x")
    assert time.monotonic() - started < 5


def test_requests_without_a_key_are_refused(fake_gemini: FakeGemini) -> None:
    response = httpx.post(f"{fake_gemini.base_url}/v1beta/models/m:generateContent", json={"contents": []})
    assert response.status_code == 403
    assert response.json()["error"]["status"] == "PERMISSION_DENIED"


def test_unknown_methods_are_404(fake_gemini: FakeGemini) -> None:
    response = httpx.post(f"{fake_gemini.base_url}/v1beta/models/m:countTokens", headers={"x-goog-api-key": "k"})
    assert response.status_code == 404


def test_reset_forgets_requests_and_script(fake_gemini: FakeGemini) -> None:
    fake_gemini.enqueue(FakeResponse(status=500))
    fake_gemini.generate_text = lambda request: "custom"
    fake_gemini.reset()
    client = client_for(fake_gemini)
    assert client.models.generate_content(model="m", contents="back to echo").text == "back to echo"
    assert len(fake_gemini.requests) == 1


def test_context_manager_frees_the_port() -> None:
    with FakeGemini() as fake:
        url = fake.base_url
        assert httpx.post(f"{url}/v1beta/models/m:generateContent", json={}).status_code == 403
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{url}/v1beta/models/m:generateContent", json={})
