"""The auth plugin as the host sees it: entry point, registrations, config tables, and provider builds."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import click
import pytest

from gateway.api import AUTH, Authenticator, ConfigError
from gateway.app import prepare
from gateway.plugin_manager import create_plugin_manager
from gateway.providers import ProviderHub
from gateway_plugins.auth import api_key, chain, jwt_bearer, none
from tests.plugins.auth.material import SigningKey, write_jwks

pytestmark = pytest.mark.anyio


def test_registers_four_authenticators_through_its_entry_point() -> None:
    plugins = create_plugin_manager()
    expected = {
        "none": none.NoAuthConfig,
        "api_key": api_key.ApiKeyConfig,
        "jwt": jwt_bearer.JwtConfig,
        "chain": chain.ChainConfig,
    }
    for name, model in expected.items():
        reg = plugins.registry.provider(AUTH, name)
        assert (reg.plugin, reg.config_model) == ("auth", model)
        assert reg.description


def test_adds_the_keys_command_group() -> None:
    plugins = create_plugin_manager()
    root = click.Group("gateway")
    plugins.pm.hook.gateway_register_commands(cli=root)
    keys = root.commands["keys"]
    assert isinstance(keys, click.Group)
    assert set(keys.commands) == {"create", "list", "revoke", "rotate"}


def _config(tmp_path: Path, auth: str, tables: str = "") -> dict[str, Any]:
    text = f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[providers]\nstore = "sqlite"\nauth = "{auth}"\n{tables}'
    return tomllib.loads(text)


async def _build(tmp_path: Path, auth: str, tables: str = "") -> tuple[Any, ProviderHub]:
    loaded, plugins = prepare(_config(tmp_path, auth, tables))
    hub = ProviderHub(loaded, plugins.registry)
    return hub.get(AUTH), hub


async def test_jwt_and_chain_built_from_toml(tmp_path: Path, rsa_key: SigningKey) -> None:
    jwks = write_jwks(tmp_path / "jwks.json", rsa_key.jwk(alg="RS256"))
    tables = f"""
[plugins.auth.jwt]
algorithms = ["RS256"]
jwks_file = "{jwks}"
issuer = "https://idp.example.com/"
audience = "https://gw.example.com/mcp"
resource_metadata_url = "https://gw.example.com/.well-known/oauth-protected-resource"

[plugins.auth.chain]
methods = ["jwt", "api_key"]
"""
    auth, hub = await _build(tmp_path, "chain", tables)
    try:
        assert isinstance(auth, Authenticator) and auth.name == "chain"
        token = rsa_key.sign(
            {
                "iss": "https://idp.example.com/",
                "aud": "https://gw.example.com/mcp",
                "sub": "u",
                "exp": 4102444800,
                "scp": ["gim:read"],
            }
        )
        principal = await auth.authenticate({"authorization": f"Bearer {token}"})
        assert (principal.subject, principal.scopes, principal.method) == ("u", {"gim:read"}, "jwt")
        issued = await hub.get(AUTH, "api_key").create_key(name="svc", scopes=["gim:write"], tenant="acme")
        assert (await auth.authenticate({"x-api-key": issued.key})).method == "api_key"
        assert auth.challenge().startswith('Bearer realm="gateway", resource_metadata="https://gw.example.com/')
    finally:
        await hub.aclose()


async def test_none_is_the_anonymous_principal(tmp_path: Path) -> None:
    auth, hub = await _build(tmp_path, "none", '[plugins.auth.none]\nsubject = "local-dev"\n')
    try:
        assert (await auth.authenticate({})).subject == "local-dev"
    finally:
        await hub.aclose()


@pytest.mark.parametrize(
    ("tables", "problem"),
    [
        ("", "plugins.auth.jwt.algorithms"),
        ('[plugins.auth.jwt]\nalgorithms = ["none"]\nsecret = "x"\nissuer = "i"\naudience = "a"\n', "algorithms"),
        ('[plugins.auth.jwt]\nalgorithms = ["HS256"]\nsecret = "x"\nissuer = "i"\naudience = "a"\nkey = 1\n', "key"),
    ],
)
async def test_a_bad_jwt_table_is_a_config_error(tmp_path: Path, tables: str, problem: str) -> None:
    with pytest.raises(ConfigError, match=problem):
        await _build(tmp_path, "jwt", tables)
