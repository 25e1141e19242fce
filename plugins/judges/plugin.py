"""Entry point of the built-in judges: ``internal`` (offline static analysis) and ``gemini`` (an LLM reviewer).

Both are providers of kind ``judge``; the thinking pack asks for them by name (``SessionConfig.judges``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.api import JUDGE, SANITIZER, ProviderContext, ProviderRegistrar, ProviderUnavailable, Sanitizer, hookimpl
from gateway_plugins.judges.gemini_config import GeminiJudgeConfig
from gateway_plugins.judges.internal import InternalJudge, InternalJudgeConfig


def _sanitizer(context: ProviderContext, name: str | None) -> Callable[[], Sanitizer] | None:
    """A lazy lookup of the sanitizer layer ``name`` (resolved at first review, so start-up order is free)."""
    if name is None:
        return None
    cache: dict[str, Any] = {}

    def lookup() -> Sanitizer:
        if "layer" not in cache:
            cache["layer"] = context.provider(SANITIZER, name)
        return cache["layer"]

    return lookup


def _internal(context: ProviderContext) -> InternalJudge:
    config = context.config if isinstance(context.config, InternalJudgeConfig) else InternalJudgeConfig()
    return InternalJudge(config, _sanitizer(context, config.secret_scanner))


def _gemini(context: ProviderContext) -> Any:
    config = context.config if isinstance(context.config, GeminiJudgeConfig) else GeminiJudgeConfig()
    if config.api_key is None:
        raise ProviderUnavailable("judge/gemini", "no API key (set GEMINI_API_KEY or [plugins.judge.gemini] api_key)")
    from gateway_plugins.judges.gemini import GeminiJudge  # the SDK loads only when the judge is used

    return GeminiJudge(config, _sanitizer(context, config.redact_with))


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        JUDGE,
        "internal",
        _internal,
        config_model=InternalJudgeConfig,
        description="Offline, deterministic review: pyflakes, ast analyses, line checks, secret scan.",
    )
    register(
        JUDGE,
        "gemini",
        _gemini,
        config_model=GeminiJudgeConfig,
        description="LLM review through the Gemini API, with a rubric and a strictly validated answer.",
    )
