"""Entry point of the built-in context plugin: the Context Engine pack, the ``file`` connector, ``gateway context``."""

from __future__ import annotations

from typing import Any

from gateway.api import CONNECTOR, PackContext, PackRegistrar, ProviderRegistrar, hookimpl
from gateway_plugins.context.config import ContextConfig
from gateway_plugins.context.file_connector import FileConnectorConfig, file_connector_factory


def _context(context: PackContext) -> Any:
    from gateway_plugins.context.pack import ContextPack

    config = context.config if isinstance(context.config, ContextConfig) else ContextConfig()
    return ContextPack(config, context)


@hookimpl
def gateway_register_tool_packs(register: PackRegistrar) -> None:
    register(
        "context",
        _context,
        config_model=ContextConfig,
        description="Context Engine: index code repositories and search them (hybrid, structure-aware).",
    )


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        CONNECTOR,
        "file",
        file_connector_factory,
        config_model=FileConnectorConfig,
        description="A local directory (.gitignore respected, binaries and large files skipped, git history).",
    )


@hookimpl
def gateway_register_commands(cli: Any) -> None:
    from gateway_plugins.context.cli import register

    register(cli)
