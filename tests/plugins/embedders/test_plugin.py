"""The embedders plugin registers ``embedder/local`` and ``embedder/gemini`` through the public hook."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path
from typing import Any

import pluggy
import pytest
from pydantic import BaseModel

from gateway import hookspecs
from gateway.api import EMBEDDER, PROJECT_NAME, Embedder, ProviderContext, ProviderUnavailable
from gateway_plugins.embedders import plugin
from gateway_plugins.embedders.config import GeminiEmbedderConfig, LocalEmbedderConfig
from gateway_plugins.embedders.gemini import GeminiEmbedder
from gateway_plugins.embedders.local import LocalEmbedder
from tests.fakes.gemini import FakeGemini


def registrations() -> dict[tuple[str, str], dict[str, Any]]:
    """What the plugin registers, through a fresh plugin manager that knows only the gateway's hookspecs."""
    pm = pluggy.PluginManager(PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    pm.register(plugin, name="embedders")
    pm.check_pending()
    seen: dict[tuple[str, str], dict[str, Any]] = {}

    def register(
        kind: str, name: str, factory: Any, *, config_model: type[BaseModel] | None = None, description: str = ""
    ) -> None:
        seen[(kind, name)] = {"factory": factory, "config_model": config_model, "description": description}

    pm.hook.gateway_register_providers(register=register)
    return seen


def context(config: BaseModel, data_dir: Path) -> ProviderContext:
    def no_other_providers(kind: str, name: str | None = None) -> Any:
        raise AssertionError("embedders need no other provider")

    return ProviderContext(kind=EMBEDDER, name="x", config=config, data_dir=data_dir, provider=no_other_providers)


def test_registers_local_and_gemini_with_their_config_models() -> None:
    seen = registrations()
    assert set(seen) == {(EMBEDDER, "local"), (EMBEDDER, "gemini")}
    assert seen[(EMBEDDER, "local")]["config_model"] is LocalEmbedderConfig
    assert seen[(EMBEDDER, "gemini")]["config_model"] is GeminiEmbedderConfig
    assert all(entry["description"] for entry in seen.values())


def test_is_declared_as_an_entry_point() -> None:
    (entry,) = [ep for ep in importlib.metadata.entry_points(group=PROJECT_NAME) if ep.name == "embedders"]
    assert entry.value == "gateway_plugins.embedders.plugin"
    assert entry.load() is plugin


def test_local_factory_builds_a_cached_embedder(tmp_path_factory: pytest.TempPathFactory) -> None:
    data_dir = tmp_path_factory.getbasetemp() / "local-embedder-cache"
    factory = registrations()[(EMBEDDER, "local")]["factory"]
    embedder = factory(context(LocalEmbedderConfig(max_length=64, threads=1), data_dir))
    assert isinstance(embedder, LocalEmbedder) and isinstance(embedder, Embedder)
    assert embedder.max_input_chars == 64 * 100
    assert list(data_dir.glob("*.onnx"))


def test_gemini_factory_without_a_key_is_unavailable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    factory = registrations()[(EMBEDDER, "gemini")]["factory"]
    config = GeminiEmbedderConfig.model_validate({"api_key": {"env": "GEMINI_API_KEY"}})
    with pytest.raises(ProviderUnavailable, match="no API key"):
        factory(context(config, tmp_path))


@pytest.mark.anyio
async def test_gemini_factory_with_a_key(tmp_path: Path, fake_gemini: FakeGemini) -> None:
    factory = registrations()[(EMBEDDER, "gemini")]["factory"]
    config = GeminiEmbedderConfig(api_key="k", base_url=fake_gemini.base_url, output_dimensionality=32)
    embedder = factory(context(config, tmp_path))
    try:
        assert isinstance(embedder, GeminiEmbedder) and embedder.id == "gemini/gemini-embedding-001/32"
        assert len((await embedder.embed(["x"], task="query"))[0]) == 32
    finally:
        await embedder.aclose()


def test_offering_the_providers_loads_no_model_runtime() -> None:
    """Registering is cheap: onnxruntime and the Gemini SDK load only when a provider is built."""
    probe = (
        "import sys, gateway_plugins.embedders.plugin as p; "
        "print(sorted(m for m in ('onnxruntime', 'onnx', 'google.genai', 'tokenizers') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
