"""Entry point of the built-in ``remote`` pack: mount existing MCP servers as tools of the gateway."""

from __future__ import annotations

from gateway.api import PackContext, PackRegistrar, hookimpl
from gateway_plugins.remote.config import RemoteConfig
from gateway_plugins.remote.pack import RemotePack


def _remote(context: PackContext) -> RemotePack:
    config = context.config if isinstance(context.config, RemoteConfig) else RemoteConfig()
    return RemotePack(config, context)


@hookimpl
def gateway_register_tool_packs(register: PackRegistrar) -> None:
    register(
        "remote",
        _remote,
        config_model=RemoteConfig,
        description="Existing MCP servers (stdio or Streamable HTTP), served with their schemas unchanged.",
    )
