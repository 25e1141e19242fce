"""The ``rate_limit`` interceptor: per-identity quotas on tools, from ``[plugins.interceptor.rate_limit]``.

.. code-block:: toml

    [[plugins.interceptor.rate_limit.rules]]
    name = "gim-daily-search"
    pack = "gim"                    # optional: the pack whose tools these are (skipped while it is not enabled)
    tools = ["gim_search_issues"]
    kind = "daily"                  # or "token_bucket" (with period_seconds, default 60)
    limit = { env = "DEFAULT_DAILY_SEARCH_LIMIT", default = 100 }   # or a plain int

The tools listed in one rule share one count per identity (``tools = ["a", "b"]`` with ``limit = 100`` admits 100
calls of a and b together); give each tool its own rule for separate counts, as ``config.toml`` does for GIM's
search and fix-bundle quotas. Tools named in no rule are unlimited. A tool in several rules must pass all of them.
Counters key on the rule's name and the caller's :attr:`gateway.api.Principal.key`, in the configured
``rate_limiter`` provider. The decision (a :class:`gateway.api.RateDecision`; with several rules, the one with the
fewest calls left) is left in ``call.context.state["rate_limit"]`` and the rule's name in
``state["rate_limit_rule"]``, refused or not.

At start every tool a rule names must be served: a typo stops the gateway. A rule whose ``pack`` is installed but
not enabled is skipped with a warning instead, so one config can carry the rules of packs a deployment leaves off.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, NoReturn

import structlog
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from gateway.api import (
    RATE_LIMITER,
    CallNext,
    ConfigError,
    Interceptor,
    InterceptorContext,
    RateDecision,
    RateLimiter,
    RateLimitExceeded,
    RateLimitRule,
    ToolCall,
)
from gateway_plugins.rate_limits.core import utc_now

log = structlog.get_logger(__name__)

STATE_KEY = "rate_limit"
RULE_STATE_KEY = "rate_limit_rule"


def _resolve_limit(value: Any) -> Any:
    """``{ env = "NAME", default = 100 }``: the variable's value when set, else the default."""
    if not isinstance(value, Mapping):
        return value
    if set(value) - {"env", "default"} or not isinstance(value.get("env"), str):
        raise ValueError('a limit is an integer or { env = "NAME", default = <integer> }')
    raw = os.environ.get(value["env"], "").strip()
    if not raw:
        if "default" not in value:
            raise ValueError(f"environment variable {value['env']} is unset and the limit has no default")
        return value["default"]
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {value['env']}={raw!r} is not an integer") from None


Limit = Annotated[int, BeforeValidator(_resolve_limit), Field(ge=0)]


class RateLimitRuleConfig(BaseModel):
    """One rule: a quota that a group of tools shares, per identity."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    pack: str | None = Field(default=None, min_length=1)
    """The pack that serves ``tools``. While it is installed but not enabled, the rule is skipped (with a warning)
    instead of stopping the start for tools nobody serves."""
    tools: list[str] = Field(min_length=1)
    """Served tool names (with any ``[packs] prefix``); together they share the rule's count."""
    kind: Literal["daily", "token_bucket"] = "daily"
    limit: Limit
    """Calls per UTC day (``daily``), or the bucket's capacity (``token_bucket``)."""
    period_seconds: float = Field(default=60.0, gt=0)
    """``token_bucket`` only: ``limit`` tokens come back every ``period_seconds``."""
    cost: int = Field(default=1, ge=1)
    """Units one call of these tools consumes."""

    @model_validator(mode="after")
    def _consistent(self) -> RateLimitRuleConfig:
        if self.kind == "token_bucket" and self.limit < self.cost:
            raise ValueError(f"token bucket {self.name!r}: limit {self.limit} must be at least the cost {self.cost}")
        return self

    def rule(self) -> RateLimitRule:
        return RateLimitRule(name=self.name, kind=self.kind, limit=self.limit, period_seconds=self.period_seconds)


class RateLimitConfig(BaseModel):
    """``[plugins.interceptor.rate_limit]``."""

    model_config = ConfigDict(extra="forbid")

    rules: list[RateLimitRuleConfig] = Field(default_factory=list)
    limiter: str | None = Field(default=None, min_length=1)
    """A ``rate_limiter`` provider name; default: ``[providers] rate_limiter``."""

    @model_validator(mode="after")
    def _unique_names(self) -> RateLimitConfig:
        names = [rule.name for rule in self.rules]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"rule names must be unique (repeated: {', '.join(duplicates)})")
        return self


class RateLimitInterceptor(Interceptor):
    """Consumes quota before the tool runs and refuses with :class:`gateway.api.RateLimitExceeded`."""

    name = "rate_limit"

    def __init__(
        self,
        rules: Sequence[RateLimitRuleConfig],
        limiter: RateLimiter,
        *,
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._limiter = limiter
        self._clock = clock
        self._by_tool: dict[str, list[tuple[RateLimitRule, int]]] = {}
        for config in rules:
            for tool in config.tools:
                self._by_tool.setdefault(tool, []).append((config.rule(), config.cost))

    def rules_for(self, tool: str) -> list[RateLimitRule]:
        return [rule for rule, _ in self._by_tool.get(tool, [])]

    async def __call__(self, call: ToolCall, call_next: CallNext) -> BaseModel:
        rules = self._by_tool.get(call.context.tool_name)  # the served name (with any pack prefix)
        if not rules:
            return await call_next(call)
        key = call.context.principal.key
        now = self._clock()
        if len(rules) > 1:  # refuse before consuming anything when one of several rules is already exhausted
            for rule, cost in rules:
                peeked = await self._limiter.peek(rule, key, now=now)
                if peeked.remaining < cost:
                    self._refuse(call, rule, _refusal(peeked, now))
        tightest: tuple[RateLimitRule, RateDecision] | None = None
        for rule, cost in rules:
            decision = await self._limiter.hit(rule, key, cost=cost, now=now)
            if not decision.allowed:
                self._refuse(call, rule, decision)
            if tightest is None or decision.remaining < tightest[1].remaining:
                tightest = (rule, decision)
        assert tightest is not None
        call.context.state[STATE_KEY] = tightest[1]
        call.context.state[RULE_STATE_KEY] = tightest[0].name
        return await call_next(call)

    def _refuse(self, call: ToolCall, rule: RateLimitRule, decision: RateDecision) -> NoReturn:
        call.context.state[STATE_KEY] = decision
        call.context.state[RULE_STATE_KEY] = rule.name
        retry_after = math.ceil(decision.retry_after or 0)
        reset_at = iso_utc(decision.reset_at)
        per = "per day (UTC)" if rule.kind == "daily" else f"per {rule.period_seconds:g} s"
        log.info("rate limit exceeded", rule=rule.name, tool=call.context.tool_name, retry_after=retry_after)
        raise RateLimitExceeded(
            f"rate limit exceeded for {call.context.tool_name}: {decision.limit} calls {per} (rule {rule.name}); "
            f"retry after {retry_after} s",
            details={
                "limit": decision.limit,
                "remaining": decision.remaining,
                "reset_at": reset_at,
                "retry_after": retry_after,
                "rule": rule.name,
            },
        )


def _refusal(peeked: RateDecision, now: datetime) -> RateDecision:
    """A peek that found too little left, as the refusal a hit would have given."""
    if peeked.retry_after is not None:
        return peeked
    wait = max(0.0, (peeked.reset_at - now).total_seconds())
    return RateDecision(False, peeked.limit, peeked.remaining, peeked.reset_at, wait)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with a ``Z``, rounded up to the second: ``2025-01-02T00:00:00Z``."""
    moment = moment.astimezone(UTC)
    if moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.isoformat().replace("+00:00", "Z")


def create_rate_limit_interceptor(ctx: InterceptorContext) -> RateLimitInterceptor:
    """Interceptor factory: checks every rule's tools against the served ones (see the module doc)."""
    config = ctx.config if isinstance(ctx.config, RateLimitConfig) else RateLimitConfig()
    rules = [rule for index, rule in enumerate(config.rules) if _applies(ctx, index, rule)]
    limiter = ctx.provider(RATE_LIMITER, config.limiter)
    return RateLimitInterceptor(rules, limiter)


def _applies(ctx: InterceptorContext, index: int, rule: RateLimitRuleConfig) -> bool:
    """Whether ``rule`` applies to this deployment: False (with a warning) when its pack is installed but not
    enabled; a :class:`ConfigError` naming the rule when it names a pack or tools that do not exist (tools not
    served now that a pack fronting remote servers may offer later, by their prefix, are only a warning)."""
    where = f"plugins.interceptor.{ctx.name}.rules[{index}] ({rule.name})"
    disabled = sorted(name for name, enabled in ctx.packs.items() if not enabled)
    if rule.pack is not None and rule.pack not in ctx.packs:
        installed = ", ".join(sorted(ctx.packs)) or "none"
        raise ConfigError(f"{where}: 'pack': no tool pack {rule.pack!r} is installed (installed: {installed})")
    if rule.pack is not None and not ctx.packs[rule.pack]:
        log.warning(
            "rate-limit rule skipped: its pack is not enabled",
            rule=rule.name,
            pack=rule.pack,
            tools=rule.tools,
        )
        return False
    later = [tool for tool in rule.tools if tool not in ctx.tools and ctx.may_offer_later(tool)]
    if later:  # a remote server that is down, or has not listed them yet, serves them later: the rule waits
        log.warning("rate-limit rule names tools not served now", rule=rule.name, tools=later)
    unknown = [tool for tool in rule.tools if tool not in ctx.tools and tool not in later]
    if unknown:
        hint = (
            f"; if they belong to a pack that is not enabled ({', '.join(disabled)}), name it in the rule "
            '(pack = "...") to skip the rule while that pack is off'
            if disabled and rule.pack is None
            else ""
        )
        raise ConfigError(
            f"{where}: unknown tool(s) {', '.join(unknown)}; served tools: {', '.join(sorted(ctx.tools)) or '(none)'}"
            + hint
        )
    foreign = [
        f"{tool} (pack {ctx.tools[tool][0]!r})"
        for tool in rule.tools
        if tool in ctx.tools and rule.pack not in (None, ctx.tools[tool][0])
    ]
    if foreign:
        raise ConfigError(f"{where}: tool(s) of another pack than {rule.pack!r}: {', '.join(foreign)}")
    return True
