"""The ``rate_limit`` interceptor on its own: config, tool checks, decisions, refusals."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from gateway.api import (
    CallContext,
    ConfigError,
    InterceptorContext,
    Principal,
    RateDecision,
    RateLimitExceeded,
    Tool,
    ToolCall,
)
from gateway_plugins.rate_limits.interceptor import (
    RateLimitConfig,
    RateLimitInterceptor,
    create_rate_limit_interceptor,
    iso_utc,
)
from gateway_plugins.rate_limits.memory import MemoryRateLimiter

pytestmark = pytest.mark.anyio

GIM_TOML = """
[[plugins.interceptor.rate_limit.rules]]
name = "gim-daily-search"
tools = ["gim_search_issues", "gim_get_fix_bundle"]
kind = "daily"
limit = { env = "DEFAULT_DAILY_SEARCH_LIMIT", default = 100 }
"""
NOON = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


class Args(BaseModel):
    q: str = ""


class Out(BaseModel):
    ok: bool = True


async def _handler(args: Args, ctx: CallContext) -> Out:
    return Out()


TOOLS = {
    name: ("gim", Tool(name, name, Args, Out, _handler))
    for name in ("gim_search_issues", "gim_get_fix_bundle", "gim_submit_issue", "gim_confirm_fix")
}


def _gim_config() -> RateLimitConfig:
    table = tomllib.loads(GIM_TOML)["plugins"]["interceptor"]["rate_limit"]
    return RateLimitConfig.model_validate(table)


def _call(tool: str, subject: str = "alice", tenant: str | None = None) -> ToolCall:
    context = CallContext(
        correlation_id="c", principal=Principal(subject, tenant=tenant), transport="memory", tool_name=tool
    )
    return ToolCall(tool=TOOLS[tool][1], pack="gim", arguments=Args(), raw_arguments={}, context=context)


class Downstream:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def __call__(self, call: ToolCall) -> BaseModel:
        self.calls.append(call.tool.name)
        return Out()


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class Setup:
    """An interceptor over a memory limiter, with a settable clock and a recording downstream."""

    def __init__(self, config: RateLimitConfig) -> None:
        self.clock = Clock(NOON)
        self.limiter = MemoryRateLimiter()
        self.interceptor = RateLimitInterceptor(config.rules, self.limiter, clock=self.clock)
        self.downstream = Downstream()

    async def __call__(self, call: ToolCall) -> BaseModel:
        return await self.interceptor(call, self.downstream)


# -- configuration ----------------------------------------------------------------------------------------------


def test_the_gim_limit_comes_from_the_environment_or_its_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEFAULT_DAILY_SEARCH_LIMIT", raising=False)
    assert _gim_config().rules[0].limit == 100
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", " 7 ")
    rule = _gim_config().rules[0].rule()
    assert (rule.name, rule.kind, rule.limit) == ("gim-daily-search", "daily", 7)
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "lots")
    with pytest.raises(ValidationError, match="DEFAULT_DAILY_SEARCH_LIMIT='lots' is not an integer"):
        _gim_config()
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "-1")
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        _gim_config()


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"rules": [{"name": "r", "tools": ["t"], "limit": 1, "window": 3}]}, "window"),
        ({"rules": [{"name": "r", "tools": [], "limit": 1}]}, "at least 1 item"),
        ({"rules": [{"name": "r", "tools": ["t"], "limit": {"env": "X_UNSET_LIMIT"}}]}, "X_UNSET_LIMIT is unset"),
        ({"rules": [{"name": "r", "tools": ["t"], "limit": {"env": "X", "deflt": 1}}]}, "a limit is an integer"),
        ({"rules": [{"name": "r", "tools": ["t"], "limit": 2, "kind": "token_bucket", "cost": 3}]}, "at least"),
        ({"rules": [{"name": "r", "tools": ["t"], "limit": 1, "kind": "hourly"}]}, "daily"),
        (
            {"rules": [{"name": "r", "tools": ["a"], "limit": 1}, {"name": "r", "tools": ["b"], "limit": 1}]},
            "repeated: r",
        ),
    ],
)
def test_invalid_configs_are_refused_with_a_reason(table: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        RateLimitConfig.model_validate(table)


def _context(config: RateLimitConfig, lookups: list[tuple[str, str | None]]) -> InterceptorContext:
    limiter = MemoryRateLimiter()

    def provider(kind: str, name: str | None = None) -> Any:
        lookups.append((kind, name))
        return limiter

    return InterceptorContext("rate_limit", config, Path("/nonexistent"), provider, TOOLS)


def test_the_factory_uses_the_configured_rate_limiter() -> None:
    lookups: list[tuple[str, str | None]] = []
    interceptor = create_rate_limit_interceptor(_context(_gim_config(), lookups))
    assert lookups == [("rate_limiter", None)]
    assert [rule.name for rule in interceptor.rules_for("gim_get_fix_bundle")] == ["gim-daily-search"]
    assert interceptor.rules_for("gim_submit_issue") == []
    named = RateLimitConfig.model_validate({"limiter": "postgres"})
    create_rate_limit_interceptor(_context(named, lookups))
    assert lookups[-1] == ("rate_limiter", "postgres")


def test_a_rule_naming_an_unknown_tool_stops_the_start() -> None:
    config = RateLimitConfig.model_validate(
        {"rules": [{"name": "typo", "tools": ["gim_search_issues", "gim_serch_issues"], "limit": 5}]}
    )
    with pytest.raises(ConfigError, match=r"rules\[0\] \(typo\): unknown tool\(s\) gim_serch_issues; served tools"):
        create_rate_limit_interceptor(_context(config, []))


# -- decisions --------------------------------------------------------------------------------------------------


async def test_search_and_fix_bundle_share_one_daily_quota_per_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "3")
    setup = Setup(_gim_config())
    for tool in ("gim_search_issues", "gim_get_fix_bundle", "gim_search_issues"):
        call = _call(tool)
        await setup(call)
        decision = call.context.state["rate_limit"]
        assert isinstance(decision, RateDecision) and decision.allowed
    assert decision.remaining == 0 and call.context.state["rate_limit_rule"] == "gim-daily-search"

    refused = _call("gim_get_fix_bundle")
    with pytest.raises(RateLimitExceeded) as caught:
        await setup(refused)
    assert setup.downstream.calls == ["gim_search_issues", "gim_get_fix_bundle", "gim_search_issues"]
    assert caught.value.code == "rate_limit_exceeded" and caught.value.http_status == 429
    assert caught.value.details == {
        "limit": 3,
        "remaining": 0,
        "reset_at": "2025-06-02T00:00:00Z",
        "retry_after": 12 * 3600,
        "rule": "gim-daily-search",
    }
    assert "gim_get_fix_bundle" in caught.value.message
    assert refused.context.state["rate_limit"].allowed is False

    await setup(_call("gim_search_issues", subject="bob"))  # another identity
    await setup(_call("gim_search_issues", subject="alice", tenant="acme"))  # another tenant
    for _ in range(10):  # no rule: unlimited, and no decision recorded
        unlimited = _call("gim_submit_issue")
        await setup(unlimited)
        assert "rate_limit" not in unlimited.context.state

    setup.clock.now = datetime(2025, 6, 2, tzinfo=UTC)  # midnight UTC: a new day
    fresh = _call("gim_search_issues")
    await setup(fresh)
    assert fresh.context.state["rate_limit"].remaining == 2


async def test_several_rules_all_apply_and_a_refusal_consumes_none_of_them() -> None:
    config = RateLimitConfig.model_validate(
        {
            "rules": [
                {"name": "daily", "tools": ["gim_search_issues"], "limit": 10},
                {"name": "burst", "tools": ["gim_search_issues"], "kind": "token_bucket", "limit": 2},
            ]
        }
    )
    setup = Setup(config)
    first = _call("gim_search_issues")
    await setup(first)
    assert first.context.state["rate_limit_rule"] == "burst"  # 1 left of the burst, 9 of the day
    assert first.context.state["rate_limit"].remaining == 1
    await setup(_call("gim_search_issues"))
    with pytest.raises(RateLimitExceeded) as caught:
        await setup(_call("gim_search_issues"))
    assert caught.value.details["rule"] == "burst"
    assert caught.value.details["retry_after"] == 30  # one token per 30 s
    setup.clock.now = NOON + timedelta(seconds=30)
    await setup(_call("gim_search_issues"))
    daily = setup.interceptor.rules_for("gim_search_issues")[0]
    assert (await setup.limiter.peek(daily, "alice", now=NOON)).remaining == 7  # the refused call took nothing
    assert len(setup.downstream.calls) == 3


def test_reset_times_are_iso_utc_rounded_up_to_the_second() -> None:
    assert iso_utc(datetime(2025, 6, 2, tzinfo=UTC)) == "2025-06-02T00:00:00Z"
    assert iso_utc(datetime(2025, 6, 1, 12, 0, 5, 1, tzinfo=UTC)) == "2025-06-01T12:00:06Z"
    tokyo = timezone(timedelta(hours=9))
    assert iso_utc(datetime(2025, 6, 2, 9, 0, tzinfo=tokyo)) == "2025-06-02T00:00:00Z"
