"""Token refresh end to end: ``gateway tokens issue`` through the real command line, then ``POST
/api/v1/auth/refresh`` over real HTTP, with the gateway's logs captured to prove no token ever reaches them."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from click.testing import CliRunner
from openapi_spec_validator import validate

from gateway.cli import cli
from gateway.logs import configure_logging
from gateway.testing import http_gateway
from tests.plugins.auth.tokens import AUDIENCE, ISSUER, SECRET

SECRET_ENV = "TEST_GATEWAY_JWT_SECRET"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    path = tmp_path / "config.toml"
    path.write_text(
        f'[gateway]\ndata_dir = "{tmp_path / "data"}"\n[sanitize]\nlogs = ""\n'
        '[providers]\nstore = "sqlite"\nauth = "jwt"\nrate_limiter = "memory"\n'
        f'[plugins.auth.jwt]\nalgorithms = ["HS256"]\nsecret = {{ env = "{SECRET_ENV}" }}\n'
        f'issuer = "{ISSUER}"\naudience = "{AUDIENCE}"\n'
        "[plugins.auth.jwt.issuing]\naccess_token_seconds = 900\n",
        encoding="utf-8",
    )
    return path


def tokens_cli(config: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--config", str(config), "tokens", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


def refresh(base: str, token: Any) -> httpx.Response:
    return httpx.post(f"{base}/api/v1/auth/refresh", json={"refresh_token": token}, timeout=30)


def refused(response: httpx.Response, reason: str) -> None:
    assert response.status_code == 401, response.text
    error = response.json()["error"]
    assert error["code"] == "AUTHENTICATION_ERROR" and error["details"]["reason"] == reason
    # a 401 carries a challenge (RFC 9110 §15.5.2): the bare one, as the request's credentials were not refused
    assert response.headers["WWW-Authenticate"] == 'Bearer realm="gateway"'
    assert response.headers["Cache-Control"] == "no-store"


def test_issue_then_rotate_then_reuse_over_http_without_logging_a_token(config: Path) -> None:
    issued = tokens_cli(config, "issue", "--subject", "ada", "--tenant", "acme", "--scopes", "search:read,index:read")
    first = json.loads(issued.stdout)
    assert set(first) == {"access_token", "refresh_token", "expires_in"} and first["expires_in"] == 900
    assert first["refresh_token"] not in issued.stderr and first["access_token"] not in issued.stderr
    logs = io.StringIO()
    configure_logging("debug", stream=logs)
    seen: list[str] = [first["access_token"], first["refresh_token"]]
    with http_gateway(config) as (base, _runtime):
        assert httpx.get(f"{base}/api/v1/tools", headers=_bearer(first), timeout=30).status_code == 200
        rotated = refresh(base, first["refresh_token"])
        assert rotated.status_code == 200, rotated.text
        assert rotated.headers["Cache-Control"] == "no-store"  # it carries tokens (RFC 6749 §5.1)
        second = rotated.json()
        assert set(second) == {"access_token", "refresh_token", "expires_in"} and second["expires_in"] == 900
        assert second["refresh_token"] != first["refresh_token"]
        seen += [second["access_token"], second["refresh_token"]]
        assert httpx.get(f"{base}/api/v1/tools", headers=_bearer(second), timeout=30).status_code == 200
        refused(refresh(base, first["refresh_token"]), "reused")
        refused(refresh(base, second["refresh_token"]), "revoked")  # the family is gone: sign in again
        refused(refresh(base, "gwr_0123456789abcdef_" + "A" * 43), "unknown")
        refused(refresh(base, "not-a-token"), "malformed")
        invalid = httpx.post(f"{base}/api/v1/auth/refresh", json={"token": "x"}, timeout=30)
        assert invalid.status_code == 400 and invalid.json()["error"]["code"] == "VALIDATION_ERROR"
        tampered = first["access_token"][:-2] + ("AA" if not first["access_token"].endswith("AA") else "BB")
        denied = httpx.get(f"{base}/api/v1/tools", headers={"Authorization": f"Bearer {tampered}"}, timeout=30)
        assert denied.status_code == 401 and denied.json()["error"]["code"] == "AUTHENTICATION_ERROR"
    text = logs.getvalue()
    assert "refresh token reused: its family is revoked" in text and "refresh token rotated" in text
    for token in seen:  # neither whole nor the secret part (a refresh token's secret, an access token's signature)
        secret = token.split("_", 2)[2] if token.startswith("gwr_") else token.rsplit(".", 1)[1]
        assert len(secret) >= 40 and token not in text and secret not in text


def test_an_expired_access_token_is_401(config: Path, tmp_path: Path) -> None:
    short = config.read_text(encoding="utf-8").replace("access_token_seconds = 900", "access_token_seconds = 60")
    config.write_text(short.replace('audience = "api"', 'audience = "api"\nleeway_seconds = 0'), encoding="utf-8")
    pair = json.loads(tokens_cli(config, "issue", "--subject", "ada", "--scopes", "").stdout)
    assert pair["expires_in"] == 60
    claims = jwt.decode(pair["access_token"], SECRET, algorithms=["HS256"], audience=AUDIENCE)
    expired = jwt.encode({**claims, "exp": claims["iat"] - 1}, SECRET, algorithm="HS256")
    with http_gateway(config) as (base, _runtime):
        response = httpx.get(f"{base}/api/v1/tools", headers={"Authorization": f"Bearer {expired}"}, timeout=30)
        assert response.status_code == 401
        assert response.json()["error"]["details"]["reason"] == "expired"


def test_revoke_ends_a_subjects_refresh_tokens(config: Path) -> None:
    pair = json.loads(tokens_cli(config, "issue", "--subject", "ada", "--tenant", "acme", "--scopes", "x:y").stdout)
    revoked = tokens_cli(config, "revoke", "--subject", "ada", "--tenant", "acme")
    assert "Revoked 1 refresh token(s)" in revoked.stderr
    with http_gateway(config) as (base, _runtime):
        refused(refresh(base, pair["refresh_token"]), "revoked")


def test_the_refresh_route_is_in_the_openapi_document_and_public(config: Path) -> None:
    pair = json.loads(tokens_cli(config, "issue", "--subject", "ada", "--scopes", "").stdout)
    with http_gateway(config) as (base, _runtime):
        document = httpx.get(f"{base}/api/v1/openapi.json", headers=_bearer(pair), timeout=30).json()
    validate(document)
    operation = document["paths"]["/api/v1/auth/refresh"]["post"]
    assert operation["security"] == [] and operation["operationId"] == "auth_refresh"
    assert {"200", "400", "401", "415", "500", "503"} <= set(operation["responses"])
    assert "429" not in operation["responses"]  # no tier: refresh tokens cannot be guessed, and clients share IPs


def test_without_issuing_there_is_no_refresh_route_and_no_tokens_command(config: Path, tmp_path: Path) -> None:
    config.write_text(config.read_text(encoding="utf-8").split("[plugins.auth.jwt.issuing]")[0], encoding="utf-8")
    result = CliRunner().invoke(cli, ["--config", str(config), "tokens", "issue", "--subject", "a", "--scopes", ""])
    assert result.exit_code != 0 and "add [plugins.auth.jwt.issuing]" in result.output
    with http_gateway(config) as (base, _runtime):
        response = refresh(base, "gwr_0123456789abcdef_" + "A" * 43)
    assert response.status_code == 401 and response.json()["error"]["details"]["reason"] == "missing"


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
def test_a_wrong_method_on_the_public_route_is_405_with_or_without_credentials(config: Path, method: str) -> None:
    pair = json.loads(tokens_cli(config, "issue", "--subject", "ada", "--scopes", "").stdout)
    with http_gateway(config) as (base, _runtime):
        for headers in ({}, _bearer(pair)):
            response = httpx.request(method, f"{base}/api/v1/auth/refresh", headers=headers, timeout=30)
            assert response.status_code == 405, (headers, response.text)
            assert response.headers["Allow"] == "POST" and response.json()["error"]["code"] == "METHOD_NOT_ALLOWED"
        hidden = httpx.request(method, f"{base}/api/v1/auth/elsewhere", timeout=30)
        assert hidden.status_code == 401  # a path no public route serves still wants credentials first


def _bearer(pair: dict[str, Any]) -> dict[str, str]:
    return {"Authorization": f"Bearer {pair['access_token']}"}


def test_a_chain_with_the_issuing_jwt_member_serves_the_refresh_too(config: Path) -> None:
    text = config.read_text(encoding="utf-8").replace('auth = "jwt"', 'auth = "chain"')
    config.write_text(text + '[plugins.auth.chain]\nmethods = ["jwt", "api_key"]\n', encoding="utf-8")
    pair = json.loads(tokens_cli(config, "issue", "--subject", "ada", "--scopes", "").stdout)
    with http_gateway(config) as (base, _runtime):
        rotated = refresh(base, pair["refresh_token"])
        assert rotated.status_code == 200
        assert httpx.get(f"{base}/api/v1/tools", headers=_bearer(rotated.json()), timeout=30).status_code == 200
