"""The authenticated principal is the identity quotas count against, over MCP and REST alike: per key, per tenant,
and (with the PostgreSQL limiter) across gateway replicas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.testing import http_gateway
from tests.gateway.http_support import (
    PLUGINS,
    Idp,
    bearer,
    call_rest,
    config,
    daily_quota,
    jwt_table,
    key_manager,
    mcp_client,
)

pytestmark = pytest.mark.anyio

LIMIT = 2


@dataclass(frozen=True)
class Quota:
    base: str
    config: dict[str, Any]
    idp: Idp

    async def keys(self, *tenants: str) -> list[dict[str, str]]:
        """``X-API-Key`` headers of new keys (fresh identities, so each test starts with full quotas)."""
        async with key_manager(self.config) as manager:
            issued = [await manager.create_key(name=t, scopes=["acct:read"], tenant=t) for t in tenants]
        return [{"X-API-Key": key.key} for key in issued]


@pytest.fixture(scope="module")
def quota(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Quota]:
    """Keys and tokens both accepted (``chain``); ``acct_read`` limited to LIMIT calls a day per identity."""
    tmp: Path = tmp_path_factory.mktemp("quota")
    idp = Idp()
    cfg = config(tmp, "chain", **daily_quota(["acct_read"], LIMIT))
    cfg["plugins"]["auth"] = {
        "chain": {"methods": ["jwt", "api_key"]},
        "jwt": jwt_table(idp.write_public_key(tmp / "idp.pem")),
    }
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        yield Quota(base, cfg, idp)


def _next_utc_midnight() -> int:
    tomorrow = datetime.now(UTC).date() + timedelta(days=1)
    return int(datetime(tomorrow.year, tomorrow.month, tomorrow.day, tzinfo=UTC).timestamp())


def assert_quota_refusal(response: httpx.Response) -> None:
    """A REST 429: the envelope with ``retry_after``, ``Retry-After`` and the ``X-RateLimit-*`` headers."""
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "RATE_LIMIT_ERROR" and error["retryable"] is True
    detail = error["details"]
    assert detail["code"] == "rate_limit_exceeded" and detail["rule"] == "acct-daily"
    assert detail["limit"] == LIMIT and detail["remaining"] == 0
    assert 0 < error["retry_after"] <= 86_400
    assert int(response.headers["Retry-After"]) == round(error["retry_after"])
    assert response.headers["X-RateLimit-Limit"] == str(LIMIT)
    assert response.headers["X-RateLimit-Remaining"] == "0"
    assert abs(int(response.headers["X-RateLimit-Reset"]) - _next_utc_midnight()) <= 1


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_each_key_has_its_own_quota_across_mcp_and_rest(quota: Quota, mode: str) -> None:
    first, other_tenant, same_tenant = await quota.keys("acme", "globex", "acme")
    async with mcp_client(f"{quota.base}/mcp", first, mode=mode) as client:
        assert not (await client.call_tool("acct_read", {})).is_error  # 1 of 2, over MCP
        second = call_rest(quota.base, "acct_read", headers=first)  # 2 of 2, over REST: the same identity
        assert second.status_code == 200 and second.headers["X-RateLimit-Remaining"] == "0"
        assert_quota_refusal(call_rest(quota.base, "acct_read", headers=first))
        refused = await client.call_tool("acct_read", {})
        assert refused.is_error
        error = json.loads(refused.content[0].text)["error"]
        assert error["code"] == "rate_limit_exceeded"
        assert error["details"]["limit"] == LIMIT and error["details"]["remaining"] == 0
        assert 0 < error["details"]["retry_after"] <= 86_400
        assert not (await client.call_tool("acct_whoami", {})).is_error  # no rule on this tool
    for headers in (other_tenant, same_tenant):  # another tenant, another key of the same tenant: untouched
        response = call_rest(quota.base, "acct_read", headers=headers)
        assert response.status_code == 200, response.text
        assert response.headers["X-RateLimit-Remaining"] == str(LIMIT - 1)


async def test_the_tenant_claim_separates_quotas_of_one_subject(quota: Quota) -> None:
    acme = bearer(quota.idp.token(sub="shared-user", tenant_id="acme-jwt", scope="acct:read"))
    globex = bearer(quota.idp.token(sub="shared-user", tenant_id="globex-jwt", scope="acct:read"))
    for _ in range(LIMIT):
        assert call_rest(quota.base, "acct_read", headers=acme).json()["key"] == "acme-jwt:shared-user"
    assert_quota_refusal(call_rest(quota.base, "acct_read", headers=acme))
    async with mcp_client(f"{quota.base}/mcp", globex) as client:
        result = await client.call_tool("acct_read", {})
    assert not result.is_error and result.structured_content["key"] == "globex-jwt:shared-user"
    # a fresh token for the same identity does not reset anything: the quota belongs to the principal
    again = bearer(quota.idp.token(sub="shared-user", tenant_id="acme-jwt", scope="acct:read"))
    assert call_rest(quota.base, "acct_read", headers=again).status_code == 429


@pytest.mark.postgres
async def test_replicas_share_keys_and_quotas_through_postgres(
    tmp_path: Path, postgres_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The production shape: API keys in the PostgreSQL store, counters in the ``postgres`` limiter, two replicas
    (each with its own data dir) behind one imagined load balancer."""
    monkeypatch.setenv("TEST_GATEWAY_DSN", postgres_db)

    def replica(name: str) -> dict[str, Any]:
        cfg = config(tmp_path / name, "api_key", **daily_quota(["acct_read"], LIMIT))
        cfg["providers"].update(store="postgres", rate_limiter="postgres")
        cfg["plugins"]["store"] = {"postgres": {"dsn": {"env": "TEST_GATEWAY_DSN"}, "min_size": 0, "max_size": 4}}
        return cfg

    async with key_manager(replica("admin")) as manager:
        acme = {"X-API-Key": (await manager.create_key(name="a", scopes=["acct:read"], tenant="acme")).key}
        globex = {"X-API-Key": (await manager.create_key(name="g", scopes=["acct:read"], tenant="globex")).key}
    with (
        http_gateway(replica("one"), extra_plugins=PLUGINS) as (one, _),
        http_gateway(replica("two"), extra_plugins=PLUGINS) as (two, _),
    ):
        assert call_rest(one, "acct_read", headers=acme).status_code == 200
        async with mcp_client(f"{two}/mcp", acme) as client:
            assert not (await client.call_tool("acct_read", {})).is_error
            refused = await client.call_tool("acct_read", {})
        assert json.loads(refused.content[0].text)["error"]["code"] == "rate_limit_exceeded"
        assert_quota_refusal(call_rest(one, "acct_read", headers=acme))
        assert call_rest(two, "acct_read", headers=globex).headers["X-RateLimit-Remaining"] == str(LIMIT - 1)
        async with key_manager(replica("admin")) as manager:
            (info,) = [k for k in await manager.list_keys() if k.tenant == "globex"]
            await manager.revoke_key(info.id)
        for base in (one, two):  # revoked on every replica at once
            assert call_rest(base, "acct_read", headers=globex).json()["error"]["details"]["reason"] == "revoked"


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        (None, ("local", None, "config")),
        ({"subject": "team-a-bot", "tenant": "team-a"}, ("team-a-bot", "team-a", "none")),
    ],
)
async def test_without_authentication_http_callers_are_the_gateway_or_the_configured_principal(
    tmp_path: Path, table: dict[str, str] | None, expected: tuple[str, str | None, str]
) -> None:
    cfg = config(tmp_path, "none")
    if table is not None:
        cfg["plugins"] = {"auth": {"none": table}}
    with http_gateway(cfg, extra_plugins=PLUGINS) as (base, _runtime):
        async with mcp_client(f"{base}/mcp") as client:
            result = await client.call_tool("acct_whoami", {"text": "hi"})
        rest = call_rest(base, "acct_whoami", {"text": "hi"})
    for caller in (result.structured_content, rest.json()):
        assert (caller["subject"], caller["tenant"], caller["method"]) == expected
