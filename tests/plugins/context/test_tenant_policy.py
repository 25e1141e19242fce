"""What connectors added by authenticated callers may reach: directories, secrets and URLs the operator allows."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from gateway.api import ValidationFailed
from gateway_plugins.context.tenant_policy import TenantConnectorPolicy
from tests.gateway.http_support import mcp_client
from tests.plugins.context.rest_support import SCOPES, envelope, rest_config, serve
from tests.plugins.context.support import sample_repo


def _fields(policy: TenantConnectorPolicy, tenant: str, options: dict) -> list[dict[str, str]]:
    with pytest.raises(ValidationFailed) as caught:
        policy.check(tenant, options)
    return caught.value.details["errors"]


def test_roots_confine_each_tenant_to_its_own_directory(tmp_path: Path) -> None:
    for tenant in ("acme", "globex"):
        (tmp_path / "repos" / tenant / "app").mkdir(parents=True)
    (tmp_path / "repos" / "acme" / "peek").symlink_to(tmp_path / "repos" / "globex")
    policy = TenantConnectorPolicy(roots=[f"{tmp_path}/repos/{{tenant}}"])
    policy.check("acme", {"root": str(tmp_path / "repos" / "acme" / "app")})
    policy.check("acme", {"root": str(tmp_path / "repos" / "acme")})
    for root in (
        tmp_path / "repos" / "globex" / "app",  # another tenant's
        tmp_path / "repos" / "acme" / "peek",  # a link out of its directory
        tmp_path / "repos" / "acme" / ".." / "globex",
        tmp_path / "repos" / "acme-evil",  # a sibling whose name starts the same
        Path("/etc"),
    ):
        assert _fields(policy, "acme", {"root": str(root)})[0]["field"] == "connector_config.root", root
    (tmp_path / "repos" / "..").mkdir(exist_ok=True)
    assert _fields(policy, "..", {"root": str(tmp_path / "repos")})  # a tenant name cannot climb out
    assert _fields(TenantConnectorPolicy(), "acme", {"root": str(tmp_path)})  # no roots: none allowed


def test_a_relative_root_is_refused_even_where_the_working_directory_is_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "repos").mkdir()
    monkeypatch.chdir(tmp_path / "repos")  # the connector would read "." from the config's directory, elsewhere
    policy = TenantConnectorPolicy(roots=[str(tmp_path / "repos")])
    for root in (".", "app", "./app/.."):
        (error,) = _fields(policy, "acme", {"root": root})
        assert error["field"] == "connector_config.root" and "absolute path" in error["message"], root
    policy.check("acme", {"root": str(tmp_path / "repos")})


def test_secrets_and_urls_are_those_the_operator_lists() -> None:
    policy = TenantConnectorPolicy(secret_env=["ACME_*"], base_urls=["https://github.acme.example/api"])
    policy.check("acme", {"token": {"env": "ACME_GITHUB_TOKEN"}, "base_url": "https://github.acme.example/api/v3"})
    policy.check("acme", {"repository": "acme/shop"})  # the type's own service URL, no secret
    errors = _fields(
        policy,
        "acme",
        {
            "token": {"env": "GATEWAY_JWT_SECRET"},
            "headers": {"X-Key": {"env": "AWS_SECRET_ACCESS_KEY"}},
            "base_url": "https://github.acme.example/apix",
        },
    )
    assert [e["field"] for e in errors] == [
        "connector_config.token",
        "connector_config.headers.X-Key",
        "connector_config.base_url",
    ]
    for url in ("https://github.acme.example.evil.test/api", "http://127.0.0.1:9/"):
        assert _fields(policy, "acme", {"base_url": url})[0]["field"] == "connector_config.base_url"


def test_a_secret_pattern_naming_the_tenant_gives_each_tenant_its_own() -> None:
    policy = TenantConnectorPolicy(secret_env=["{TENANT}_*", "shared_{tenant}_token"])
    policy.check("acme", {"token": {"env": "ACME_GITHUB_TOKEN"}})
    policy.check("acme", {"token": {"env": "shared_acme_token"}})
    assert _fields(policy, "evil", {"token": {"env": "ACME_GITHUB_TOKEN"}})[0]["field"] == "connector_config.token"
    assert _fields(policy, "*", {"token": {"env": "ACME_GITHUB_TOKEN"}})  # a tenant named like a pattern widens none


def test_over_rest_and_mcp_a_tenant_reaches_only_what_is_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPERATOR_ONLY_SECRET", "s3cr3t-operator-only-value")
    mine = sample_repo(tmp_path / "repos" / "acme" / "shop", with_git=False)
    theirs = sample_repo(tmp_path / "repos" / "globex" / "shop", with_git=False)
    policy = {"roots": [f"{tmp_path}/repos/{{tenant}}"], "secret_env": ["ACME_*"]}
    config = rest_config(tmp_path / "data", tenant_connectors=policy)
    with serve(config, {"acme": ("acme", SCOPES)}) as api:
        body = {"type": "file", "name": "shop", "config": {"root": str(mine)}}
        assert api.ok("POST", "/connectors", "acme", 201, json=body)["id"] == "file-shop"
        github = {"type": "github", "name": "gh"}
        refused = [
            ({"type": "file", "name": "peek", "config": {"root": str(theirs)}}, "config.root"),
            ({"type": "file", "name": "etc", "config": {"root": "/etc"}}, "config.root"),
            ({**github, "config": {"repository": "o/r", "token": {"env": "OPERATOR_ONLY_SECRET"}}}, "config.token"),
            ({**github, "config": {"repository": "o/r", "token": {"env": "NOT_SET_ANYWHERE"}}}, "config.token"),
            ({**github, "config": {"repository": "o/r", "base_url": "http://127.0.0.1:9"}}, "config.base_url"),
        ]
        messages = set()
        for body, field in refused:
            response = api.call("POST", "/connectors", "acme", json=body)
            [error] = envelope(response, 400, "VALIDATION_ERROR")["details"]["errors"]
            assert error["field"] == field, body
            if field == "config.token":
                messages.add(error["message"])
        assert len(messages) == 1 and "not set" not in messages.pop()  # a set and an unset variable look alike
        response = api.call("PUT", "/connectors/file-shop", "acme", json={"config": {"root": str(theirs)}})
        assert envelope(response, 400, "VALIDATION_ERROR")["details"]["errors"][0]["field"] == "config.root"
        assert api.ok("GET", "/connectors/file-shop", "acme")["config"]["root"] == str(mine)

        async def over_mcp() -> None:  # the tool holds it to the same rules
            async with mcp_client(f"{api.base}/mcp", api.keys["acme"]) as acme:
                result = await acme.call_tool(
                    "context.connector_management",
                    {"action": "add", "connector_config": {"type": "file", "name": "peek", "root": str(theirs)}},
                )
                assert result.is_error
                assert json.loads(result.content[0].text)["error"]["details"]["errors"][0]["field"] == (
                    "connector_config.root"
                )

        anyio.run(over_mcp)


def test_a_policy_narrowed_later_holds_at_the_next_index_job(tmp_path: Path) -> None:
    mine = sample_repo(tmp_path / "repos" / "acme" / "shop", with_git=False)
    first = rest_config(tmp_path / "data", tenant_connectors={"roots": [f"{tmp_path}/repos"]})
    with serve(first, {"acme": ("acme", SCOPES)}) as api:
        api.add_file_connector("acme", mine)
        api.index("acme")
        assert api.ok("GET", "/connectors/file-shop", "acme")["status"] == "active"
    narrowed = rest_config(tmp_path / "data", tenant_connectors={"roots": [f"{tmp_path}/elsewhere"]})
    with serve(narrowed, {"acme": ("acme", SCOPES)}) as api:
        api.index("acme")
        info = api.ok("GET", "/connectors/file-shop", "acme")
    assert info["status"] == "error" and "connector_config.root" in info["stats"]["last_error"]
    assert info["stats"]["documents_indexed"] == 6  # refused before reading: what was indexed stays


def test_a_root_naming_an_unknown_users_home_is_refused(tmp_path: Path) -> None:
    (error,) = _fields(TenantConnectorPolicy(roots=[str(tmp_path)]), "acme", {"root": "~nosuchuser-zz/repo"})
    assert error["field"] == "connector_config.root" and "absolute path" in error["message"]
