"""Entry point of the built-in gim plugin: the Global Issue Memory pack and its ``gateway gim`` commands."""

from __future__ import annotations

from typing import Any

from gateway.api import PackContext, PackRegistrar, hookimpl
from gateway_plugins.gim.config import GimConfig


def _gim(context: PackContext) -> Any:
    from gateway_plugins.gim.pack import GimPack

    config = context.config if isinstance(context.config, GimConfig) else GimConfig()
    return GimPack(config, context)


@hookimpl
def gateway_register_tool_packs(register: PackRegistrar) -> None:
    register(
        "gim",
        _gim,
        config_model=GimConfig,
        description="Global Issue Memory: search known errors, get verified fix bundles, submit and confirm fixes.",
    )


@hookimpl
def gateway_register_commands(cli: Any) -> None:
    from gateway_plugins.gim.cli import register

    register(cli)
