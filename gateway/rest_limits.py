"""Token buckets for the REST routes packs contribute: tiers, the limiter, ``X-RateLimit-*`` headers and the 429.

Every route that declares a tier has one bucket per caller (:attr:`gateway.api.Principal.key`; an anonymous
caller of a public route is counted by client address). A bucket holds ``limit`` tokens and refills at
``limit / period_seconds`` per second. Buckets live in the configured ``rate_limiter`` provider (``[rest]
rate_limiter``, default ``[providers] rate_limiter``): the same providers and token-bucket arithmetic as the
``rate_limit`` interceptor, so on ``postgres`` a bucket is exact across every replica, as the daily quotas are.

Tier sizes: the spec's defaults (:data:`DEFAULT_TIERS`), tiers a route declares with their own defaults
(:class:`gateway.api.RateTier`), both resized by ``[rest.tiers]``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import UTC

import structlog
from starlette.responses import JSONResponse

from gateway.api.errors import ConfigError, ServiceUnavailable, ToolError
from gateway.api.rate_limits import RateDecision, RateLimiter, RateLimitRule
from gateway.api.registry import RATE_LIMITER
from gateway.api.rest import RateTier, RestRoute
from gateway.http_errors import error_envelope
from gateway.runtime import GatewayRuntime

log = structlog.get_logger(__name__)

DEFAULT_TIERS: Mapping[str, RateTier] = {
    tier.name: tier
    for tier in (
        RateTier("search", 100),
        RateTier("index", 10),
        RateTier("connectors", 20),
        RateTier("config", 5),
    )
}
"""The Context Engine spec's tiers (requests per minute per user); health checks declare none (unlimited)."""


def rate_limit_headers(decision: RateDecision | None) -> dict[str, str]:
    """``X-RateLimit-Limit``, ``-Remaining`` and ``-Reset`` (Unix seconds) for a decision; none without one."""
    if decision is None:
        return {}
    reset_at = decision.reset_at if decision.reset_at.tzinfo else decision.reset_at.replace(tzinfo=UTC)
    return {
        "X-RateLimit-Limit": str(decision.limit),
        "X-RateLimit-Remaining": str(decision.remaining),
        "X-RateLimit-Reset": str(math.ceil(reset_at.timestamp())),
    }


def rate_limited(decision: RateDecision, correlation_id: str) -> JSONResponse:
    """The spec's 429: ``RATE_LIMIT_ERROR``, ``retry_after`` (whole seconds, at least 1) and ``Retry-After``."""
    wait = max(1, math.ceil(decision.retry_after or 0))
    return error_envelope(
        429,
        "Rate limit exceeded",
        detail=f"Too many requests. Try again in {wait} seconds.",
        correlation_id=correlation_id,
        retryable=True,
        retry_after=wait,
        headers=rate_limit_headers(decision),
    )


class RouteLimits:
    """The bucket rule of each limited route, and the limiter that counts them."""

    def __init__(self, runtime: GatewayRuntime, routes: Iterable[tuple[str, RestRoute]]) -> None:
        self._runtime = runtime
        source = runtime.loaded.source
        configured = runtime.loaded.config.rest.tiers
        tiers: dict[str, RateTier] = dict(DEFAULT_TIERS)
        declared_by: dict[str, str] = {}
        routes = list(routes)
        for owner, route in routes:  # tiers declared by routes first: a name may then be used by any route
            if isinstance(route.tier, RateTier):
                known = tiers.get(route.tier.name)
                if known is not None and known != route.tier:
                    first = declared_by.get(route.tier.name, "the gateway")
                    raise ConfigError(
                        f"{source}: {owner}: REST route {route.method} {route.path} declares tier "
                        f"{route.tier.name!r} as {_size(route.tier)}, but {first} declares it as {_size(known)}; "
                        "use the tier by name or give yours another name"
                    )
                tiers[route.tier.name] = route.tier
                declared_by.setdefault(route.tier.name, owner)
        for name, size in configured.items():
            tiers[name] = RateTier(name, size.limit, size.period_seconds)
        self._rules: dict[tuple[str, str], RateLimitRule] = {}
        used: set[str] = set()
        for owner, route in routes:
            if route.tier is None:
                continue
            name = route.tier if isinstance(route.tier, str) else route.tier.name
            tier = tiers.get(name)
            if tier is None:
                raise ConfigError(
                    f"{source}: {owner}: REST route {route.method} {route.path} names the rate-limit tier {name!r}, "
                    f"which neither the gateway nor [rest.tiers] defines (tiers: {', '.join(sorted(tiers))})"
                )
            used.add(name)
            self._rules[(route.method, route.path)] = RateLimitRule(
                name=f"rest:{route.method} {route.path}",
                kind="token_bucket",
                limit=tier.limit,
                period_seconds=tier.period_seconds,
            )
        for name in sorted(set(configured) - used):
            log.warning("rest.tiers: no served REST route uses this tier", tier=name, tiers=sorted(used))
        self._limiter: RateLimiter | None = None
        if self._rules:  # build the limiter now: a misconfigured one fails the start, not the first request
            self._limiter = runtime.providers.get(RATE_LIMITER, runtime.loaded.config.rest.rate_limiter)

    def rule(self, route: RestRoute) -> RateLimitRule | None:
        """The bucket rule of ``route``; ``None`` when it is unlimited."""
        return self._rules.get((route.method, route.path))

    async def take(self, rule: RateLimitRule, key: str) -> RateDecision:
        """Take one token from ``key``'s bucket of ``rule``. A limiter failure refuses (fail closed): 503."""
        assert self._limiter is not None
        try:
            return await self._limiter.hit(rule, key)
        except ToolError:
            raise
        except Exception as exc:
            log.exception("rate limiter failed", rule=rule.name)
            raise ServiceUnavailable("the rate limiter is unavailable; retry shortly") from exc


def _size(tier: RateTier) -> str:
    return f"{tier.limit} per {tier.period_seconds:g} s"
