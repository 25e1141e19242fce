"""Entry point of the built-in thinking pack: the ``sequentialthinking`` tool, with optional code audits."""

from __future__ import annotations

from gateway.api import PackContext, PackRegistrar, hookimpl
from gateway_plugins.thinking.config import ThinkingConfig
from gateway_plugins.thinking.pack import ThinkingPack


def _thinking(context: PackContext) -> ThinkingPack:
    config = context.config if isinstance(context.config, ThinkingConfig) else ThinkingConfig()
    return ThinkingPack(config, context)


@hookimpl
def gateway_register_tool_packs(register: PackRegistrar) -> None:
    register(
        "thinking",
        _thinking,
        config_model=ThinkingConfig,
        description="sequentialthinking, compatible with the reference server, with optional judge-based code audits.",
    )
