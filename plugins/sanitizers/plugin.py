"""Entry point of the built-in sanitizers plugin: the ``patterns``, ``contextual`` and ``gemini`` layers.

Which layers run, in which order, per field kind, is the host's ``[sanitize]`` table; each layer's own
options are ``[plugins.sanitizer.<name>]``::

    [sanitize]
    error_message = ["patterns", "contextual"]
    query = ["patterns"]

    [plugins.sanitizer.gemini]
    api_key = { env = "GEMINI_API_KEY" }
    model = "gemini-2.5-flash"
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from gateway.api import SANITIZER, ProviderContext, ProviderRegistrar, Secret, api_key, hookimpl

__all__ = ["ContextualConfig", "GeminiConfig", "PatternsConfig", "gateway_register_providers"]


class PatternsConfig(BaseModel):
    """``[plugins.sanitizer.patterns]``."""

    model_config = ConfigDict(extra="forbid")
    disabled: list[str] = Field(default_factory=list, description="Rule kinds to switch off, e.g. ['phone'].")


class ContextualConfig(BaseModel):
    """``[plugins.sanitizer.contextual]``."""

    model_config = ConfigDict(extra="forbid")
    disabled: list[str] = Field(default_factory=list, description="Rule kinds to switch off, e.g. ['cookie_value'].")


class GeminiConfig(BaseModel):
    """``[plugins.sanitizer.gemini]``."""

    model_config = ConfigDict(extra="forbid")
    api_key: Secret = Field(default={"env": "GEMINI_API_KEY"}, validate_default=True)  # type: ignore[assignment]
    model: str = "gemini-2.5-flash"
    base_url: str | None = Field(default=None, description="Another endpoint (a proxy, a test server).")
    timeout_seconds: float = Field(default=20.0, gt=0)
    max_attempts: int = Field(default=1, ge=1, le=5, description="SDK attempts per call, including the first.")
    max_input_chars: int = Field(default=32_000, gt=0, description="Longer texts are refused (fail closed).")
    min_kept_ratio: float = Field(default=0.5, ge=0, le=1, description="A rewrite keeping less text fails.")


def _patterns(ctx: ProviderContext):
    from gateway_plugins.sanitizers.patterns import PatternSanitizer

    config = ctx.config if isinstance(ctx.config, PatternsConfig) else PatternsConfig()
    return PatternSanitizer(disabled=frozenset(config.disabled))


def _contextual(ctx: ProviderContext):
    from gateway_plugins.sanitizers.contextual import ContextualSanitizer

    config = ctx.config if isinstance(ctx.config, ContextualConfig) else ContextualConfig()
    return ContextualSanitizer(disabled=frozenset(config.disabled))


def _gemini(ctx: ProviderContext):
    config = ctx.config if isinstance(ctx.config, GeminiConfig) else GeminiConfig()
    key = api_key(config.api_key, "sanitizer.gemini", "no API key (set GEMINI_API_KEY or api_key)")
    from gateway_plugins.sanitizers.gemini import GeminiSanitizer  # the SDK loads only once a key is set

    return GeminiSanitizer.from_settings(
        api_key=key,
        model=config.model,
        base_url=config.base_url,
        timeout_seconds=config.timeout_seconds,
        max_attempts=config.max_attempts,
        max_input_chars=config.max_input_chars,
        min_kept_ratio=config.min_kept_ratio,
    )


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        SANITIZER,
        "patterns",
        _patterns,
        config_model=PatternsConfig,
        description="Layer 1: credentials, random tokens, personal data, internal hosts and project paths "
        "(RE2 rules + validators, one pass, linear time, offline).",
    )
    register(
        SANITIZER,
        "contextual",
        _contextual,
        config_model=ContextualConfig,
        description="Layer 2 offline: values near credential words, in query strings, CLI flags and cookies.",
    )
    register(
        SANITIZER,
        "gemini",
        _gemini,
        config_model=GeminiConfig,
        description="Layer 2 LLM: Gemini rewrite with strict JSON, verified and fail-closed.",
    )
