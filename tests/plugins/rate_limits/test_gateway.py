"""The ``rate_limit`` interceptor inside a real gateway: MCP and REST callers, every built-in limiter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from structlog.testing import capture_logs

from gateway.api import CallContext, ConfigError, GatewayError, Principal, Tool, ToolPack, hookimpl
from gateway.app import DEFAULT_CONFIG
from gateway.testing import http_gateway, running_gateway

pytestmark = pytest.mark.anyio


class Query(BaseModel):
    q: str


class Answer(BaseModel):
    echo: str


async def _answer(args: Query, ctx: CallContext) -> Answer:
    return Answer(echo=args.q)


class DemoPack(ToolPack):
    name = "demo"

    def tools(self) -> list[Tool[Any, Any]]:
        return [Tool(name, name, Query, Answer, _answer) for name in ("demo_search", "demo_fetch", "demo_submit")]


class DemoPlugin:
    @hookimpl
    def gateway_register_tool_packs(self, register: Any) -> None:
        register("demo", lambda ctx: DemoPack())


def _config(tmp_path: Path, limiter: str, *, tools: list[str] | None = None, extra: dict[str, Any] | None = None):
    return {
        "gateway": {"data_dir": str(tmp_path / "data"), "identity": "tester"},
        "packs": {"enabled": ["demo"]},
        "sanitize": {"logs": ""},
        "providers": {"rate_limiter": limiter},
        "pipeline": {"interceptors": [{"name": "rate_limit"}]},
        "plugins": {
            "interceptor": {
                "rate_limit": {
                    "rules": [
                        {
                            "name": "daily-search",
                            "tools": tools or ["demo_search", "demo_fetch"],
                            "kind": "daily",
                            "limit": {"env": "TEST_DEMO_DAILY_LIMIT", "default": 3},
                        }
                    ]
                }
            },
            **(extra or {}),
        },
    }


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def limiter_config(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, Any]]:
    if request.param != "postgres":
        return request.param, {}
    dsn = request.getfixturevalue("postgres_db")
    request.getfixturevalue("monkeypatch").setenv("TEST_LIMITER_DSN", dsn)
    return "postgres", {"rate_limiter": {"postgres": {"dsn": {"env": "TEST_LIMITER_DSN"}}}}


async def test_an_mcp_caller_gets_its_quota_then_a_structured_refusal(
    tmp_path: Path, limiter_config: tuple[str, dict[str, Any]]
) -> None:
    limiter, extra = limiter_config
    config = _config(tmp_path, limiter, extra=extra)
    async with running_gateway(config, extra_plugins=[("demo", DemoPlugin())]) as client:
        for tool in ("demo_search", "demo_fetch", "demo_search"):
            assert not (await client.call_tool(tool, {"q": "x"})).is_error
        refused = await client.call_tool("demo_fetch", {"q": "x"})
        assert refused.is_error
        error = json.loads(refused.content[0].text)["error"]
        assert error["code"] == "rate_limit_exceeded"
        assert error["details"]["limit"] == 3 and error["details"]["remaining"] == 0
        assert error["details"]["rule"] == "daily-search" and error["details"]["reset_at"].endswith("T00:00:00Z")
        assert 0 < error["details"]["retry_after"] <= 86_400
        for _ in range(5):
            assert not (await client.call_tool("demo_submit", {"q": "x"})).is_error  # no rule: unlimited
        runtime = client.runtime
        other = runtime.new_context(principal=Principal("someone-else"))
        assert not (await runtime.call_tool("demo_search", {"q": "x"}, other)).is_error


async def test_the_sqlite_quota_survives_a_gateway_restart(tmp_path: Path) -> None:
    config = _config(tmp_path, "sqlite")
    async with running_gateway(config, extra_plugins=[("demo", DemoPlugin())]) as client:
        for _ in range(2):
            assert not (await client.call_tool("demo_search", {"q": "x"})).is_error
    assert [path.name for path in (tmp_path / "data").rglob("rate_limits.sqlite3")] == ["rate_limits.sqlite3"]
    async with running_gateway(config, extra_plugins=[("demo", DemoPlugin())]) as client:
        assert not (await client.call_tool("demo_search", {"q": "x"})).is_error
        assert (await client.call_tool("demo_search", {"q": "x"})).is_error


async def test_a_rule_for_a_tool_nobody_serves_stops_the_gateway(tmp_path: Path) -> None:
    config = _config(tmp_path, "memory", tools=["demo_search", "demo_serch"])
    with pytest.raises((ConfigError, GatewayError), match="demo_serch"):
        async with running_gateway(config, extra_plugins=[("demo", DemoPlugin())]):
            pass


def test_rest_callers_see_rate_limit_headers_and_a_429(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_DEMO_DAILY_LIMIT", "2")
    config = _config(tmp_path, "sqlite")
    config["transport"] = {"kind": "http"}
    with http_gateway(config, extra_plugins=[("demo", DemoPlugin())]) as (base_url, _runtime):
        with httpx.Client(base_url=base_url, timeout=30) as http:
            first = http.post("/api/v1/tools/demo_search", json={"q": "x"})
            assert first.status_code == 200
            assert first.headers["X-RateLimit-Limit"] == "2" and first.headers["X-RateLimit-Remaining"] == "1"
            assert http.post("/api/v1/tools/demo_fetch", json={"q": "x"}).status_code == 200
            refused = http.post("/api/v1/tools/demo_search", json={"q": "x"})
            assert refused.status_code == 429
            assert refused.headers["X-RateLimit-Remaining"] == "0"
            assert int(refused.headers["Retry-After"]) >= 1
            assert "X-RateLimit-Limit" not in http.post("/api/v1/tools/demo_submit", json={"q": "x"}).headers


async def test_the_shipped_config_serves_a_deployment_without_gim(tmp_path: Path) -> None:
    """``config.toml`` with another pack enabled: GIM's quota rules are skipped with a warning, not an error."""
    shipped = DEFAULT_CONFIG.read_text()
    assert 'enabled = ["gim"]' in shipped
    text = shipped.replace('enabled = ["gim"]', 'enabled = ["thinking"]')
    with capture_logs() as logs:
        async with running_gateway(text, tmp_path / "data") as client:
            assert {tool.name for tool in (await client.list_tools()).tools} == {"sequentialthinking"}
            assert client.runtime.loaded.config.pipeline.interceptors[0].name == "rate_limit"
    skipped = {e["rule"]: e["tools"] for e in logs if e["event"] == "rate-limit rule skipped: its pack is not enabled"}
    assert skipped == {"gim-daily-search": ["gim_search_issues"], "gim-daily-fix-bundle": ["gim_get_fix_bundle"]}
