"""The authenticators behind the gateway's real HTTP transport (Streamable HTTP on a loopback port)."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import httpx

from gateway.api import AUTH
from gateway.cli import CliEnvironment
from gateway.testing import http_gateway
from tests.plugins.auth.material import SigningKey

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _config(tmp_path: Path, auth: str, tables: str = "") -> Path:
    path = tmp_path / "config.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[transport]\nkind = "http"\n[packs]\nenabled = []\n'
        f'[providers]\nstore = "sqlite"\nauth = "{auth}"\n{tables}',
        encoding="utf-8",
    )
    return path


def _initialize(url: str, headers: dict[str, str], query: str = "") -> httpx.Response:
    return httpx.post(f"{url}/mcp{query}", json=INITIALIZE, headers={**ACCEPT, **headers}, timeout=30)


def test_api_key_over_http(tmp_path: Path) -> None:
    config = _config(tmp_path, "api_key")

    async def create() -> str:
        async with CliEnvironment(config).running_provider(AUTH, "api_key") as auth:
            return (await auth.create_key(name="svc", scopes=["gim:read"], tenant="acme")).key

    key = anyio.run(create)
    with http_gateway(config) as (url, _runtime):
        for headers in ({}, {"X-API-Key": "junk"}, {"X-API-Key": key[:-1] + ("A" if key[-1] != "A" else "B")}):
            refused = _initialize(url, headers)
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == 'ApiKey realm="gateway", header="X-API-Key"'
            assert key[25:40] not in refused.text
        assert _initialize(url, {}, f"?api_key={key}").status_code == 401  # never from the query string
        assert _initialize(url, {"X-API-Key": key}).status_code == 200


def test_jwt_over_http(tmp_path: Path, rsa_key: SigningKey) -> None:
    (tmp_path / "idp.pem").write_bytes(rsa_key.public_pem)
    config = _config(
        tmp_path,
        "jwt",
        f'[plugins.auth.jwt]\nalgorithms = ["RS256"]\npublic_key_file = "{tmp_path / "idp.pem"}"\n'
        'issuer = "https://idp.test/"\naudience = "https://gw.test/mcp"\n'
        'resource_metadata_url = "https://gw.test/.well-known/oauth-protected-resource"\n',
    )
    now = int(time.time())
    claims = {"iss": "https://idp.test/", "aud": "https://gw.test/mcp", "sub": "ada", "iat": now, "exp": now + 60}
    with http_gateway(config) as (url, _runtime):
        refused = _initialize(url, {})
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert challenge.startswith('Bearer realm="gateway"')
        assert 'resource_metadata="https://gw.test/.well-known/oauth-protected-resource"' in challenge
        expired = rsa_key.sign({**claims, "exp": now - 120})
        assert _initialize(url, {"Authorization": f"Bearer {expired}"}).status_code == 401
        assert _initialize(url, {"Authorization": f"Bearer {rsa_key.sign(claims)}"}).status_code == 200
