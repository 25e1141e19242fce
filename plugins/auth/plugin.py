"""Entry point of the built-in auth plugin: the ``none``, ``api_key``, ``jwt`` and ``chain`` authenticators, and
the ``gateway keys`` and ``gateway tokens`` commands."""

from __future__ import annotations

from typing import Any

from gateway.api import AUTH, ProviderRegistrar, hookimpl
from gateway_plugins.auth import api_key, chain, jwt_bearer, none


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        AUTH,
        "none",
        none.build,
        config_model=none.NoAuthConfig,
        description="No authentication: every caller is one configured principal with every scope.",
    )
    register(
        AUTH,
        "api_key",
        api_key.build,
        config_model=api_key.ApiKeyConfig,
        description="X-API-Key header; keys hashed in the relational store, managed with 'gateway keys'.",
    )
    register(
        AUTH,
        "jwt",
        jwt_bearer.build,
        config_model=jwt_bearer.JwtConfig,
        description="Authorization: Bearer JWT, verified locally (HS* secret, PEM public key or JWKS file); "
        "optionally the gateway's own issuer with refresh-token rotation.",
    )
    register(
        AUTH,
        "chain",
        chain.build,
        config_model=chain.ChainConfig,
        description="Accept any of several auth providers (e.g. JWT for people, API keys for services).",
    )


@hookimpl
def gateway_register_commands(cli: Any) -> None:
    from gateway_plugins.auth import cli as keys_cli
    from gateway_plugins.auth import token_cli

    keys_cli.register(cli)
    token_cli.register(cli)
