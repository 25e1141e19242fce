"""What the auth plugin's commands (``gateway keys``, ``gateway tokens``) share: running one action against the
deployment's auth provider, with the gateway's errors turned into click's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import click

from gateway.api import AUTH, ConfigError, PluginError, ProviderUnavailable, ToolError

P = TypeVar("P")
T = TypeVar("T")


def run_with_auth_provider(name: str, adapt: Callable[[Any], P], action: Callable[[P], Awaitable[T]]) -> T:
    """Start the configured ``name`` auth provider (through the :class:`gateway.api.CommandEnvironment` click hands
    the command), run ``action(adapt(provider))`` and close the provider. ``adapt`` picks what the command needs
    from the provider, raising :class:`click.ClickException` if it has none of it."""
    env = click.get_current_context().obj
    if env is None or not hasattr(env, "running_provider"):
        raise click.UsageError("no gateway configuration is loaded (run through the 'gateway' command)")

    async def main() -> T:
        async with env.running_provider(AUTH, name) as provider:
            return await action(adapt(provider))

    try:
        return anyio.run(main)
    except ToolError as exc:
        raise click.ClickException(exc.message) from exc
    except (ConfigError, PluginError, ProviderUnavailable) as exc:
        raise click.ClickException(str(exc)) from exc


def split_scopes(raw: str) -> list[str]:
    """``--scopes``: comma- or space-separated scope names (empty for none)."""
    return [scope for part in raw.replace(",", " ").split() if (scope := part.strip())]
