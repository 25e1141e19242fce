"""What the gateway tells clients about its authentication: RFC 9728 protected-resource metadata (checked with the
MCP SDK's own discovery code), the ``WWW-Authenticate`` challenges, and the OpenAPI security schemes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    handle_protected_resource_response,
)
from openapi_spec_validator import validate
from structlog.testing import capture_logs

from gateway.api import ConfigError
from gateway.http_auth import Challenge, describe_auth, parse_challenges
from gateway.oauth_metadata import is_issuer_url, protected_resource_routes
from gateway.testing import http_gateway, running_gateway
from tests.gateway.http_support import (
    ISSUER,
    METADATA_URL,
    PLUGINS,
    PUBLIC_URL,
    RESOURCE,
    Idp,
    config,
    jwt_table,
    key_manager,
)

WELL_KNOWN = "/.well-known/oauth-protected-resource"
SCOPES = ["acct:read", "acct:write"]
API_KEY_SCHEME = {"type": "apiKey", "in": "header", "name": "X-API-Key"}


def _jwt_config(
    tmp_path: Path, *, auth: str = "jwt", public_url: str | None = PUBLIC_URL, **jwt: Any
) -> dict[str, Any]:
    transport = {"public_url": public_url} if public_url else {}
    table = {**jwt_table(Idp().write_public_key(tmp_path / "idp.pem")), **jwt}
    plugins: dict[str, Any] = {"auth": {"jwt": table}}
    if auth == "chain":
        plugins["auth"]["chain"] = {"methods": ["jwt", "api_key"]}
    return config(tmp_path, auth, transport=transport, plugins=plugins)


@pytest.fixture(scope="module")
def public(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A jwt gateway whose public URL is https://gateway.test (as behind a TLS-terminating proxy)."""
    with http_gateway(_jwt_config(tmp_path_factory.mktemp("public")), extra_plugins=PLUGINS) as (base, _):
        yield base


@pytest.mark.parametrize("path", [WELL_KNOWN + "/mcp", WELL_KNOWN])
def test_the_metadata_names_the_resource_its_issuer_and_scopes(public: str, path: str) -> None:
    response = httpx.get(f"{public}{path}", headers={"Origin": "https://any.example"})
    assert response.status_code == 200
    assert response.json() == {
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "scopes_supported": SCOPES,
        "bearer_methods_supported": ["header"],
        "resource_name": "mcp-gateway",
    }
    assert response.headers["access-control-allow-origin"] == "*"  # public, readable by browser-based clients
    preflight = httpx.options(
        f"{public}{path}",
        headers={
            "Origin": "https://any.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "mcp-protocol-version",
        },
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == "*"


@pytest.mark.anyio
async def test_an_sdk_oauth_client_finds_the_metadata_from_the_challenge(public: str) -> None:
    async with httpx2.AsyncClient() as http:
        refused = await http.post(f"{public}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        announced = extract_resource_metadata_from_www_auth(refused)
        assert announced == METADATA_URL
        # the proxy in front maps https://gateway.test to this loopback port
        urls = build_protected_resource_metadata_discovery_urls(announced.replace(PUBLIC_URL, public), public + "/mcp")
        metadata = await handle_protected_resource_response(await http.get(urls[0]))
    assert metadata is not None
    assert str(metadata.resource) == RESOURCE and [str(a) for a in metadata.authorization_servers] == [ISSUER]
    assert metadata.scopes_supported == SCOPES


@pytest.mark.anyio
async def test_without_a_public_url_the_resource_is_the_request_url(tmp_path: Path) -> None:
    cfg = _jwt_config(tmp_path, auth="chain", public_url=None, resource_metadata_url=None)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        async with httpx2.AsyncClient() as http:
            refused = await http.get(f"{base}/api/v1/tools")
            assert extract_resource_metadata_from_www_auth(refused) is None
            for url in build_protected_resource_metadata_discovery_urls(None, f"{base}/mcp"):
                metadata = await handle_protected_resource_response(await http.get(url))
                assert metadata is not None and str(metadata.resource) == f"{base}/mcp"
        challenge = {c.scheme: c.params for c in parse_challenges(refused.headers["www-authenticate"])}
        assert challenge == {"Bearer": {"realm": "gateway"}, "ApiKey": {"realm": "gateway", "header": "X-API-Key"}}


def test_no_metadata_without_an_issuer(tmp_path: Path) -> None:
    with http_gateway(config(tmp_path, "api_key"), extra_plugins=PLUGINS) as (base, _):
        for path in (WELL_KNOWN, WELL_KNOWN + "/mcp"):
            assert httpx.get(f"{base}{path}").status_code == 404


@pytest.mark.anyio
async def test_a_challenge_that_misses_the_metadata_is_reported(tmp_path: Path) -> None:
    cfg = _jwt_config(tmp_path, resource_metadata_url="https://gateway.test/elsewhere", audience="api")
    async with running_gateway(cfg, extra_plugins=PLUGINS) as client:
        with capture_logs() as logs:
            protected_resource_routes(client.runtime, describe_auth(client.runtime))
    warnings = {entry["event"]: entry for entry in logs if entry["log_level"] == "warning"}
    pointer = warnings["the 401 challenge does not point at this gateway's protected-resource metadata"]
    assert pointer["expected"] == METADATA_URL and METADATA_URL in pointer["hint"]
    assert warnings["tokens minted for this resource (audience = resource URL) would be refused"]["audiences"] == [
        "api"
    ]


def test_an_issuer_that_is_not_a_url_is_left_out_and_reported(tmp_path: Path) -> None:
    cfg = _jwt_config(tmp_path, issuer=["context-engine", ISSUER])
    with capture_logs() as logs, http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        document = httpx.get(f"{base}{WELL_KNOWN}/mcp").json()
    assert document["authorization_servers"] == [ISSUER]  # RFC 9728 §2: issuer identifiers are URLs
    warned = [e for e in logs if e["log_level"] == "warning" and "not a URL" in e["event"]]
    assert [e["issuer"] for e in warned] == ["context-engine"]
    (tmp_path / "alone").mkdir()
    alone = _jwt_config(tmp_path / "alone", issuer="context-engine")
    with http_gateway(alone, extra_plugins=PLUGINS) as (base, _):
        assert "authorization_servers" not in httpx.get(f"{base}{WELL_KNOWN}").json()


@pytest.mark.parametrize(
    ("issuer", "published"),
    [
        (ISSUER, True),
        ("https://login.example.com/realms/acme", True),
        ("http://localhost:8080/realms/dev", True),  # a local identity provider in development
        ("http://idp.example.com/", False),  # RFC 8414: https
        ("context-engine", False),
        ("https://idp.example.com/?tenant=a", False),
        ("https://idp.example.com/#x", False),
        ("urn:example:idp", False),
    ],
)
def test_which_issuers_are_urls(issuer: str, published: bool) -> None:
    assert is_issuer_url(issuer) is published


def test_a_document_derived_from_the_host_is_served_only_for_a_served_host(tmp_path: Path) -> None:
    cfg = _jwt_config(tmp_path, public_url=None, resource_metadata_url=None)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        port = base.rsplit(":", 1)[1]
        for path in (WELL_KNOWN, WELL_KNOWN + "/mcp"):
            forged = httpx.get(f"{base}{path}", headers={"Host": "evil.example"})
            assert forged.status_code == 421 and forged.json()["error"]["details"]["reason"] == "host"
            assert "evil.example/mcp" not in forged.text and "cache-control" not in forged.headers
            served = httpx.get(f"{base}{path}", headers={"Host": f"localhost:{port}"})
            assert served.status_code == 200 and served.json()["resource"] == f"http://localhost:{port}/mcp"
            assert served.headers["cache-control"] == "public, max-age=300"  # it names only a host served here


# -- OpenAPI ---------------------------------------------------------------------------------------------------


def _issue_key(cfg: dict[str, Any], scopes: list[str]) -> dict[str, str]:
    async def issue() -> str:
        async with key_manager(cfg) as manager:
            return (await manager.create_key(name="r", scopes=scopes)).key

    return {"X-API-Key": anyio.run(issue)}


def test_openapi_declares_the_api_key_scheme_and_shows_the_callers_tools(tmp_path: Path) -> None:
    cfg = config(tmp_path, "api_key")
    reader = _issue_key(cfg, ["acct:read"])
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        assert httpx.get(f"{base}/api/v1/openapi.json").status_code == 401  # only /health is public (spec §5)
        document = httpx.get(f"{base}/api/v1/openapi.json", headers=reader).json()
    validate(document)
    assert document["components"]["securitySchemes"] == {"apiKey": API_KEY_SCHEME}
    assert document["security"] == [{"apiKey": []}]
    tools = {path.rsplit("/", 1)[1]: ops["post"] for path, ops in document["paths"].items() if "/tools/" in path}
    assert set(tools) == {"acct_whoami", "acct_read"}
    assert tools["acct_read"]["security"] == [{"apiKey": ["acct:read"]}]
    assert tools["acct_read"]["x-required-scope"] == "acct:read"
    assert "security" not in tools["acct_whoami"]  # the document-wide requirement applies
    assert "WWW-Authenticate" in tools["acct_read"]["responses"]["401"]["headers"]


def test_openapi_of_a_chain_declares_bearer_and_api_key(tmp_path: Path) -> None:
    cfg = _jwt_config(tmp_path, auth="chain")
    both = _issue_key(cfg, SCOPES)
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _):
        document = httpx.get(f"{base}/api/v1/openapi.json", headers=both).json()
    validate(document)
    assert document["servers"] == [{"url": PUBLIC_URL}]
    assert document["components"]["securitySchemes"] == {
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "bearerFormat": "JWT",
            "description": f"An access token from {ISSUER}",
        },
        "apiKey": API_KEY_SCHEME,
    }
    write = document["paths"]["/api/v1/tools/acct_write"]["post"]
    assert write["security"] == [{"bearer": ["acct:write"]}, {"apiKey": ["acct:write"]}]


def test_openapi_without_auth_declares_no_security(tmp_path: Path) -> None:
    with http_gateway(config(tmp_path, "none"), extra_plugins=PLUGINS) as (base, _):
        document = httpx.get(f"{base}/api/v1/openapi.json").json()
    validate(document)
    assert "security" not in document and "securitySchemes" not in document["components"]
    assert "401" not in document["paths"]["/api/v1/tools/acct_read"]["post"]["responses"]


# -- configuration and parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", ["*", "null", "https://app.example/", "app.example", "ftp://app.example"])
def test_an_invalid_allowed_origin_is_refused_at_start(tmp_path: Path, origin: str) -> None:
    with pytest.raises(ConfigError, match="allowed_origins"):
        with http_gateway(config(tmp_path, "none", transport={"allowed_origins": [origin]}), extra_plugins=PLUGINS):
            pass


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('Bearer realm="gateway"', [Challenge("Bearer", {"realm": "gateway"})]),
        (
            'Bearer realm="a, b", error="invalid_token", error_description="say \\"hi\\"", ApiKey header=X-API-Key',
            [
                Challenge("Bearer", {"realm": "a, b", "error": "invalid_token", "error_description": 'say "hi"'}),
                Challenge("ApiKey", {"header": "X-API-Key"}),
            ],
        ),
        ("Basic, Negotiate abc123==, Bearer", [Challenge("Basic"), Challenge("Negotiate"), Challenge("Bearer")]),
        ("", []),
        (None, []),
    ],
)
def test_challenges_are_parsed(header: str | None, expected: list[Challenge]) -> None:
    assert parse_challenges(header) == expected
