"""The embedder chain the host builds from configuration: gemini (against the fake API) then local, a key from the
environment, factories that fail."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from gateway.api import ServiceUnavailable, hookimpl
from gateway.app import prepare
from gateway.embedding_chain import EmbedderChain
from gateway.providers import ProviderHub
from tests.fakes.gemini import FakeGemini
from tests.gateway.embedding_chain_support import DIM, KEY

pytestmark = pytest.mark.anyio


def host_chain(tmp_path: Path, fake: FakeGemini) -> EmbedderChain:
    loaded, plugins = prepare(
        {
            "gateway": {"data_dir": str(tmp_path)},
            "providers": {"embedder": ["gemini", "local"], "embedder_retry_seconds": 5},
            "plugins": {
                "embedder": {
                    "gemini": {
                        "api_key": {"env": "GEMINI_API_KEY"},
                        "base_url": fake.base_url,
                        "output_dimensionality": DIM,
                    },
                    "local": {"max_length": 128},
                }
            },
        }
    )
    return ProviderHub(loaded, plugins.registry).embeddings()


async def _close(chain: EmbedderChain) -> None:
    for embedder in chain.embedders:
        await embedder.aclose()


async def test_the_host_builds_the_configured_chain(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    chain = host_chain(tmp_path, fake_gemini)
    assert [e.id for e in chain.embedders] == [f"gemini/gemini-embedding-001/{DIM}", "local/all-MiniLM-L6-v2-int8/384"]
    assert (await chain.embed_query("q")).embedder_id == f"gemini/gemini-embedding-001/{DIM}"
    assert fake_gemini.requests[0].headers["x-goog-api-key"] == KEY
    assert list((tmp_path / "providers" / "embedder" / "local").glob("*.onnx")), "the graph is cached in data_dir"
    await _close(chain)


async def test_the_key_comes_from_gemini_api_key_when_the_config_names_none(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    loaded, plugins = prepare(
        {
            "gateway": {"data_dir": str(tmp_path)},
            "providers": {"embedder": ["gemini", "local"]},
            "plugins": {"embedder": {"gemini": {"base_url": fake_gemini.base_url, "output_dimensionality": DIM}}},
        }
    )
    chain = ProviderHub(loaded, plugins.registry).embeddings()
    try:
        assert (await chain.embed_query("q")).embedder_id == f"gemini/gemini-embedding-001/{DIM}"
        assert fake_gemini.requests[0].headers["x-goog-api-key"] == KEY
    finally:
        await _close(chain)


async def test_the_host_leaves_gemini_out_without_a_key(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    chain = host_chain(tmp_path, fake_gemini)
    assert [e.id for e in chain.embedders] == ["local/all-MiniLM-L6-v2-int8/384"]
    result = await chain.embed_query("q")
    assert (result.embedder_id, result.skipped) == ("local/all-MiniLM-L6-v2-int8/384", ())
    assert fake_gemini.requests == []


class _BuggyEmbedderPlugin:
    """A plugin whose embedder factory has a bug (a plain exception, not ProviderUnavailable)."""

    @hookimpl
    def gateway_register_providers(self, register: Any) -> None:
        def factory(context: Any) -> Any:
            raise RuntimeError("a bug in the factory")

        register("embedder", "buggy", factory)


async def test_an_embedder_factory_with_a_bug_is_left_out_and_named(tmp_path: Path) -> None:
    loaded, plugins = prepare(
        {"gateway": {"data_dir": str(tmp_path)}, "providers": {"embedder": ["buggy", "local"]}},
        extra_plugins=[("buggy_embedder", _BuggyEmbedderPlugin())],
    )
    with capture_logs() as logs:
        chain = ProviderHub(loaded, plugins.registry).embeddings()
    try:
        assert [e.id for e in chain.embedders] == ["local/all-MiniLM-L6-v2-int8/384"]
        assert (await chain.embed_query("q")).embedder_id == "local/all-MiniLM-L6-v2-int8/384"
        assert any(e["event"] == "embedder factory failed" and e["embedder"] == "buggy" for e in logs)
    finally:
        await _close(chain)


def test_an_embedder_factory_with_a_bug_in_the_fallback_is_a_clear_outage(tmp_path: Path) -> None:
    loaded, plugins = prepare(
        {"gateway": {"data_dir": str(tmp_path)}, "providers": {"embedder": ["buggy"]}},
        extra_plugins=[("buggy_embedder", _BuggyEmbedderPlugin())],
    )
    with pytest.raises(ServiceUnavailable, match="'buggy' is unavailable: its factory failed: RuntimeError: a bug"):
        ProviderHub(loaded, plugins.registry).embeddings()


async def test_a_key_read_with_its_line_ending_works_and_one_with_a_control_character_is_named(
    tmp_path: Path, fake_gemini: FakeGemini, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY + "\n")
    chain = host_chain(tmp_path, fake_gemini)
    try:
        assert (await chain.embed_query("q")).embedder_id == f"gemini/gemini-embedding-001/{DIM}"
        assert fake_gemini.requests[0].headers["x-goog-api-key"] == KEY
    finally:
        await _close(chain)
    monkeypatch.setenv("GEMINI_API_KEY", KEY + "\nX-Injected: 1")
    with capture_logs() as logs:
        chain = host_chain(tmp_path / "second", fake_gemini)
    assert [e.id for e in chain.embedders] == ["local/all-MiniLM-L6-v2-int8/384"]
    assert any("control character" in str(e.get("reason")) for e in logs)
    await _close(chain)
