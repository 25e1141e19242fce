"""Entry point of the built-in rate_limits plugin: ``memory``, ``sqlite`` and ``postgres`` rate limiters, and the
``rate_limit`` interceptor that applies per-tool quotas with them."""

from __future__ import annotations

from gateway.api import RATE_LIMITER, InterceptorRegistrar, ProviderRegistrar, hookimpl
from gateway_plugins.rate_limits.interceptor import RateLimitConfig, create_rate_limit_interceptor
from gateway_plugins.rate_limits.memory import create_memory_limiter
from gateway_plugins.rate_limits.persistent import (
    PostgresRateLimiterConfig,
    SqliteRateLimiterConfig,
    create_postgres_limiter,
    create_sqlite_limiter,
)


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        RATE_LIMITER,
        "memory",
        create_memory_limiter,
        description="Counters in process memory: one gateway process, reset on restart",
    )
    register(
        RATE_LIMITER,
        "sqlite",
        create_sqlite_limiter,
        config_model=SqliteRateLimiterConfig,
        description="Counters in a SQLite file of their own: survive restarts, shared by processes on one machine",
    )
    register(
        RATE_LIMITER,
        "postgres",
        create_postgres_limiter,
        config_model=PostgresRateLimiterConfig,
        description="Counters in PostgreSQL: shared by every gateway replica",
    )


@hookimpl
def gateway_register_interceptors(register: InterceptorRegistrar) -> None:
    register(
        "rate_limit",
        create_rate_limit_interceptor,
        config_model=RateLimitConfig,
        description="Per-identity quotas on tools (daily, or token bucket), refused with rate_limit_exceeded",
    )
