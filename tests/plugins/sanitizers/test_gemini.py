"""The Gemini layer against the local fake server, through the real google-genai SDK: success, and fail-closed
on every kind of bad answer."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from gateway.api import FieldKind, PlaceholderMap, ProviderContext, ProviderUnavailable, SanitizationFailed
from gateway_plugins.sanitizers.gemini import GeminiSanitizer
from gateway_plugins.sanitizers.plugin import GeminiConfig, _gemini
from tests.fakes.gemini import FakeGemini, FakeResponse

TEXT = "Deploy to payments-core failed for Jane Roe; see runbook"


@pytest.fixture
def gemini_server() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


def layer(fake: FakeGemini, timeout: float = 5.0) -> GeminiSanitizer:
    return GeminiSanitizer.from_settings(api_key="test-key", base_url=fake.base_url, timeout_seconds=timeout)


def answer(text: str, redactions: list[dict]) -> str:
    return json.dumps({"sanitized_text": text, "redactions": redactions})


def run(sanitizer: GeminiSanitizer, text: str, placeholders: PlaceholderMap | None = None):
    async def go():
        try:
            return await sanitizer.sanitize(
                text, kind=FieldKind.ERROR_MESSAGE, placeholders=placeholders or PlaceholderMap()
            )
        finally:
            await sanitizer.aclose()

    return anyio.run(go)


def test_success_maps_markers_to_stable_placeholders(gemini_server: FakeGemini) -> None:
    gemini_server.generate_text = lambda _req: answer(
        "Deploy to [[REDACTED_1]] failed for [[REDACTED_2]]; see runbook",
        [
            {"original": "payments-core", "kind": "internal_service", "category": "internal"},
            {"original": "Jane Roe", "kind": "person", "category": "pii"},
        ],
    )
    placeholders = PlaceholderMap()
    placeholders.placeholder("PERSON", "Jane Roe")
    placeholders.placeholder("PERSON", "Someone Else")
    result = run(layer(gemini_server), TEXT, placeholders)
    assert result.text == "Deploy to <INTERNAL_SERVICE_1> failed for <PERSON_1>; see runbook"
    assert {(f.kind, TEXT[f.start : f.end]) for f in result.findings} == {
        ("internal_service", "payments-core"),
        ("person", "Jane Roe"),
    }
    (request,) = gemini_server.requests_for("generateContent")
    config = request.json["generationConfig"]
    assert config["responseMimeType"] == "application/json" and "responseSchema" in config
    assert "payments-core" in json.dumps(request.json["contents"])


BAD_ANSWERS = {
    "not_json": "Sure! Here is the sanitized text: Deploy to X failed",
    "missing_fields": json.dumps({"sanitized_text": "Deploy to X failed"}),
    "wrong_types": json.dumps({"sanitized_text": 42, "redactions": "none"}),
    "unknown_marker": answer("Deploy to [[REDACTED_7]] failed", []),
    "value_left_in": answer(
        "Deploy to payments-core [[REDACTED_1]]", [{"original": "payments-core", "kind": "svc", "category": "internal"}]
    ),
    "hallucinated_original": answer("Deploy", [{"original": "not in input", "kind": "x", "category": "secret"}]),
    "dropped_text": answer("[[REDACTED_1]]", [{"original": "Jane Roe", "kind": "person", "category": "pii"}]),
    "reintroduced_secret": answer(TEXT + " key AKIAQ3EXAMPL2Z7K4M5N", []),
}


@pytest.mark.parametrize("name", sorted(BAD_ANSWERS))
def test_bad_answers_fail_closed(gemini_server: FakeGemini, name: str) -> None:
    gemini_server.generate_text = lambda _req: BAD_ANSWERS[name]
    with pytest.raises(SanitizationFailed) as info:
        run(layer(gemini_server), TEXT)
    assert info.value.details["layer"] == "gemini"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_an_outage_fails_closed_as_unavailable_not_as_a_doubt_about_the_text(
    gemini_server: FakeGemini, status: int
) -> None:
    for _ in range(4):  # the SDK's own retries, if any
        gemini_server.enqueue(FakeResponse(status=status))
    with pytest.raises(ProviderUnavailable, match="sanitizer:gemini"):
        run(layer(gemini_server), TEXT)


def test_a_request_the_service_refuses_fails_closed_as_a_doubt(gemini_server: FakeGemini) -> None:
    gemini_server.enqueue(FakeResponse(status=400))
    with pytest.raises(SanitizationFailed, match="LLM layer"):
        run(layer(gemini_server), TEXT)


def test_garbage_body_fails_closed(gemini_server: FakeGemini) -> None:
    gemini_server.enqueue(FakeResponse(status=200, raw_body="<html>oops</html>"))
    with pytest.raises(SanitizationFailed):
        run(layer(gemini_server), TEXT)


def test_timeout_fails_closed_as_unavailable(gemini_server: FakeGemini) -> None:
    gemini_server.enqueue(FakeResponse(status=200, delay=5.0))
    with pytest.raises(ProviderUnavailable) as info:
        run(layer(gemini_server, timeout=0.5), TEXT)
    assert "0.5s" in info.value.reason or "failed" in info.value.reason


def test_empty_text_needs_no_call(gemini_server: FakeGemini) -> None:
    assert run(layer(gemini_server), "   ").text == "   "
    assert gemini_server.requests == []


def test_factory_without_key_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    ctx = ProviderContext("sanitizer", "gemini", GeminiConfig(), tmp_path, lambda kind, name=None: None)
    with pytest.raises(ProviderUnavailable):
        _gemini(ctx)


def test_factory_reads_key_from_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, gemini_server: FakeGemini) -> None:
    monkeypatch.setenv("GEMINI_TEST_KEY", "k-123")
    config = GeminiConfig.model_validate({"api_key": {"env": "GEMINI_TEST_KEY"}, "base_url": gemini_server.base_url})
    sanitizer = _gemini(ProviderContext("sanitizer", "gemini", config, tmp_path, lambda kind, name=None: None))
    gemini_server.generate_text = lambda _req: answer(TEXT, [])
    assert run(sanitizer, TEXT).text == TEXT
    assert gemini_server.requests[0].headers.get("x-goog-api-key") == "k-123"
