"""Hook specifications of the gateway, in the manner of pytest's ``hookspec.py``.

Every hook runs at start-up (or, for :func:`gateway_register_commands`, when the CLI is built); none runs per
request. Per-request work is an async method on an object a hook registered (a tool handler, a REST route
handler from :meth:`gateway.api.ToolPack.rest_routes`, an interceptor, a provider). Plugins implement hooks with
:data:`gateway.api.hookimpl` and are found through the ``mcp_gateway`` entry-point group; a misspelled hook name
fails loudly at start-up (``check_pending``).
"""

from __future__ import annotations

from typing import Any

from gateway.api.markers import hookspec
from gateway.api.registry import InterceptorRegistrar, PackRegistrar, ProviderRegistrar


@hookspec
def gateway_register_providers(register: ProviderRegistrar) -> None:
    """Offer swappable providers (embedders, vector stores, stores, rate limiters, sanitizers, auth, judges,
    connectors).

    Called once when the plugin manager is built, before configuration is validated, so that config can name
    any provider an installed plugin offers. Call ``register(kind, name, factory, config_model=...)`` once per
    provider. Nothing is constructed here: factories run only when a deployment selects the provider, or when a pack
    builds a configured instance with :meth:`gateway.api.PackContext.instantiate` (one per source, for connectors).

    The return value is ignored.
    """


@hookspec
def gateway_register_tool_packs(register: PackRegistrar) -> None:
    """Offer tool packs.

    Called once when the plugin manager is built. Call ``register(name, factory, config_model=...)`` per pack.
    A pack is served only when ``[packs] enabled`` names it; its factory then receives a
    :class:`gateway.api.PackContext`.

    The return value is ignored.
    """


@hookspec
def gateway_register_interceptors(register: InterceptorRegistrar) -> None:
    """Offer call-pipeline links (rate limiting, auditing...).

    Called once when the plugin manager is built. A link runs only when ``[pipeline] interceptors`` names it,
    in the order given there.

    The return value is ignored.
    """


@hookspec
def gateway_register_commands(cli: Any) -> None:
    """Add sub-commands to the ``gateway`` command line.

    Called once when the CLI starts. ``cli`` is the root :class:`click.Group`; add commands or groups to it
    (the GIM pack adds ``gateway gim stats``). A command reaches the configured deployment through click's
    ``obj``, a :class:`gateway.api.CommandEnvironment`.

    The return value is ignored.
    """
