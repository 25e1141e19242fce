"""The ``rate_limit`` interceptor on its own: config, tool checks, decisions, refusals."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from structlog.testing import capture_logs

from gateway.api import (
    CallContext,
    ConfigError,
    InterceptorContext,
    Principal,
    RateLimitExceeded,
    Tool,
    ToolCall,
)
from gateway.app import DEFAULT_CONFIG
from gateway_plugins.rate_limits.interceptor import (
    RateLimitConfig,
    RateLimitInterceptor,
    create_rate_limit_interceptor,
    iso_utc,
)
from gateway_plugins.rate_limits.memory import MemoryRateLimiter

pytestmark = pytest.mark.anyio

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
    """The rate-limit table of the shipped ``config.toml`` (GIM's quotas)."""
    table = tomllib.loads(DEFAULT_CONFIG.read_text())["plugins"]["interceptor"]["rate_limit"]
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


def test_the_gim_limits_come_from_the_environment_or_their_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEFAULT_DAILY_SEARCH_LIMIT", raising=False)
    rules = [rule.rule() for rule in _gim_config().rules]
    assert [(rule.name, rule.kind, rule.limit) for rule in rules] == [
        ("gim-daily-search", "daily", 100),
        ("gim-daily-fix-bundle", "daily", 100),
    ]
    assert [(rule.pack, rule.tools) for rule in _gim_config().rules] == [
        ("gim", ["gim_search_issues"]),
        ("gim", ["gim_get_fix_bundle"]),
    ]
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", " 7 ")  # the one knob sets both
    assert [rule.limit for rule in _gim_config().rules] == [7, 7]
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


def _context(
    config: RateLimitConfig, lookups: list[tuple[str, str | None]], packs: dict[str, bool] | None = None
) -> InterceptorContext:
    limiter = MemoryRateLimiter()

    def provider(kind: str, name: str | None = None) -> Any:
        lookups.append((kind, name))
        return limiter

    installed = {"gim": True} if packs is None else packs
    return InterceptorContext("rate_limit", config, Path("/nonexistent"), provider, TOOLS, installed)


def test_the_factory_uses_the_configured_rate_limiter() -> None:
    lookups: list[tuple[str, str | None]] = []
    interceptor = create_rate_limit_interceptor(_context(_gim_config(), lookups))
    assert lookups == [("rate_limiter", None)]
    assert [rule.name for rule in interceptor.rules_for("gim_search_issues")] == ["gim-daily-search"]
    assert [rule.name for rule in interceptor.rules_for("gim_get_fix_bundle")] == ["gim-daily-fix-bundle"]
    assert interceptor.rules_for("gim_submit_issue") == []
    named = RateLimitConfig.model_validate({"limiter": "postgres"})
    create_rate_limit_interceptor(_context(named, lookups))
    assert lookups[-1] == ("rate_limiter", "postgres")


def test_a_rule_naming_an_unknown_tool_stops_the_start() -> None:
    rule = {"name": "typo", "tools": ["gim_search_issues", "gim_serch_issues"], "limit": 5}
    config = RateLimitConfig.model_validate({"rules": [rule]})
    with pytest.raises(ConfigError, match=r"rules\[0\] \(typo\): unknown tool\(s\) gim_serch_issues; served tools"):
        create_rate_limit_interceptor(_context(config, []))
    with_pack = RateLimitConfig.model_validate({"rules": [rule | {"pack": "gim"}]})
    with pytest.raises(ConfigError, match="unknown tool"):  # naming the pack does not excuse a typo
        create_rate_limit_interceptor(_context(with_pack, []))


def test_the_rules_of_a_pack_that_is_not_enabled_are_skipped_with_a_warning() -> None:
    lookups: list[tuple[str, str | None]] = []
    with capture_logs() as logs:
        interceptor = create_rate_limit_interceptor(_context(_gim_config(), lookups, {"gim": False, "thinking": True}))
    assert interceptor.rules_for("gim_search_issues") == [] and interceptor.rules_for("gim_get_fix_bundle") == []
    skipped = [(e["rule"], e["pack"], e["tools"]) for e in logs if e["event"].startswith("rate-limit rule skipped")]
    assert skipped == [
        ("gim-daily-search", "gim", ["gim_search_issues"]),
        ("gim-daily-fix-bundle", "gim", ["gim_get_fix_bundle"]),
    ]
    assert all(e["log_level"] == "warning" for e in logs if e["event"].startswith("rate-limit rule skipped"))


@pytest.mark.parametrize(
    ("rule", "packs", "message"),
    [
        (
            {"name": "r", "pack": "gimm", "tools": ["gim_search_issues"]},
            {"gim": True},
            r"rules\[0\] \(r\): 'pack': no tool pack 'gimm' is installed \(installed: gim\)",
        ),
        (
            {"name": "r", "pack": "thinking", "tools": ["gim_search_issues"]},
            {"gim": True, "thinking": True},
            r"rules\[0\] \(r\): tool\(s\) of another pack than 'thinking': gim_search_issues \(pack 'gim'\)",
        ),
        (
            {"name": "r", "tools": ["thinking_tool"]},
            {"gim": True, "thinking": False},
            r"unknown tool\(s\) thinking_tool; .*pack that is not enabled \(thinking\), name it in the rule",
        ),
    ],
)
def test_a_rule_naming_a_pack_or_tool_that_does_not_exist_stops_the_start(
    rule: dict[str, Any], packs: dict[str, bool], message: str
) -> None:
    config = RateLimitConfig.model_validate({"rules": [rule | {"limit": 5}]})
    with pytest.raises(ConfigError, match=message):
        create_rate_limit_interceptor(_context(config, [], packs))


# -- decisions --------------------------------------------------------------------------------------------------


async def test_search_and_fix_bundle_each_have_their_own_100_a_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEFAULT_DAILY_SEARCH_LIMIT", raising=False)
    setup = Setup(_gim_config())
    for n in range(100):
        call = _call("gim_search_issues")
        await setup(call)
        assert call.context.state["rate_limit"].remaining == 99 - n
    refused = _call("gim_search_issues")
    with pytest.raises(RateLimitExceeded) as caught:
        await setup(refused)
    assert caught.value.code == "rate_limit_exceeded" and caught.value.http_status == 429
    assert caught.value.details == {
        "limit": 100,
        "remaining": 0,
        "reset_at": "2025-06-02T00:00:00Z",
        "retry_after": 12 * 3600,
        "rule": "gim-daily-search",
    }
    assert "gim_search_issues" in caught.value.message and refused.context.state["rate_limit"].allowed is False

    for n in range(100):  # the fix bundles have a count of their own, untouched by the searches
        call = _call("gim_get_fix_bundle")
        await setup(call)
        assert call.context.state["rate_limit_rule"] == "gim-daily-fix-bundle"
        assert call.context.state["rate_limit"].remaining == 99 - n
    with pytest.raises(RateLimitExceeded) as caught:
        await setup(_call("gim_get_fix_bundle"))
    assert caught.value.details["rule"] == "gim-daily-fix-bundle" and caught.value.details["limit"] == 100
    assert setup.downstream.calls.count("gim_search_issues") == 100
    assert setup.downstream.calls.count("gim_get_fix_bundle") == 100

    await setup(_call("gim_search_issues", subject="bob"))  # another identity
    await setup(_call("gim_search_issues", subject="alice", tenant="acme"))  # another tenant
    for _ in range(10):  # no rule: unlimited, and no decision recorded
        unlimited = _call("gim_submit_issue")
        await setup(unlimited)
        assert "rate_limit" not in unlimited.context.state

    setup.clock.now = datetime(2025, 6, 2, tzinfo=UTC)  # midnight UTC: a new day for both counts
    for tool in ("gim_search_issues", "gim_get_fix_bundle"):
        fresh = _call(tool)
        await setup(fresh)
        assert fresh.context.state["rate_limit"].remaining == 99


async def test_the_environment_knob_sets_both_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEFAULT_DAILY_SEARCH_LIMIT", "3")
    setup = Setup(_gim_config())
    for tool in ("gim_search_issues", "gim_get_fix_bundle"):
        for _ in range(3):
            await setup(_call(tool))
        with pytest.raises(RateLimitExceeded) as caught:
            await setup(_call(tool))
        assert caught.value.details["limit"] == 3


async def test_the_tools_of_one_rule_share_its_count() -> None:
    config = RateLimitConfig.model_validate(
        {"rules": [{"name": "shared", "tools": ["gim_search_issues", "gim_get_fix_bundle"], "limit": 3}]}
    )
    setup = Setup(config)
    for tool in ("gim_search_issues", "gim_get_fix_bundle", "gim_search_issues"):
        await setup(_call(tool))
    with pytest.raises(RateLimitExceeded):
        await setup(_call("gim_get_fix_bundle"))


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
