"""The rate_limits plugin: what it registers, and how its provider factories build limiters."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any

import pluggy
import pytest
from pydantic import BaseModel

from gateway import hookspecs
from gateway.api import PROJECT_NAME, ProviderContext, ProviderUnavailable, RateLimitRule
from gateway_plugins.rate_limits import plugin
from gateway_plugins.rate_limits.interceptor import RateLimitConfig
from gateway_plugins.rate_limits.memory import MemoryRateLimiter, create_memory_limiter
from gateway_plugins.rate_limits.persistent import (
    PostgresRateLimiterConfig,
    SqliteRateLimiterConfig,
    StoreRateLimiter,
    create_postgres_limiter,
    create_sqlite_limiter,
)
from gateway_plugins.stores.postgres import PostgresStore

pytestmark = pytest.mark.anyio
RULE = RateLimitRule(name="r", kind="daily", limit=2)


def test_the_entry_point_offers_three_limiters_and_the_interceptor() -> None:
    (entry_point,) = [ep for ep in importlib.metadata.entry_points(group=PROJECT_NAME) if ep.name == "rate_limits"]
    assert entry_point.load() is plugin
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    manager.register(plugin)
    providers: dict[tuple[str, str], dict[str, Any]] = {}
    interceptors: dict[str, dict[str, Any]] = {}
    manager.hook.gateway_register_providers(
        register=lambda kind, name, factory, **options: providers.__setitem__((kind, name), options)
    )
    manager.hook.gateway_register_interceptors(
        register=lambda name, factory, **options: interceptors.__setitem__(name, options)
    )
    assert set(providers) == {("rate_limiter", "memory"), ("rate_limiter", "sqlite"), ("rate_limiter", "postgres")}
    assert providers[("rate_limiter", "sqlite")]["config_model"] is SqliteRateLimiterConfig
    assert providers[("rate_limiter", "postgres")]["config_model"] is PostgresRateLimiterConfig
    assert interceptors["rate_limit"]["config_model"] is RateLimitConfig


def _context(name: str, config: BaseModel | None, data_dir: Path, stores: dict[str, Any]) -> ProviderContext:
    def provider(kind: str, name: str | None = None) -> Any:
        assert kind == "store"
        return stores[name or "default"]()

    return ProviderContext("rate_limiter", name, config, data_dir, provider)


async def test_the_sqlite_limiter_keeps_its_own_file_in_its_data_dir(tmp_path: Path) -> None:
    limiter = create_sqlite_limiter(_context("sqlite", SqliteRateLimiterConfig(), tmp_path, {}))
    try:
        assert (await limiter.hit(RULE, "alice")).allowed
    finally:
        await limiter.close()
    assert (tmp_path / "rate_limits.sqlite3").is_file()


@pytest.mark.postgres
async def test_the_postgres_limiter_without_dsn_shares_the_postgres_store(postgres_db: str) -> None:
    shared = PostgresStore(postgres_db)
    context = _context("postgres", PostgresRateLimiterConfig(), Path("/nonexistent"), {"postgres": lambda: shared})
    limiter = create_postgres_limiter(context)
    assert isinstance(limiter, StoreRateLimiter)
    try:
        assert (await limiter.hit(RULE, "alice")).remaining == 1
        await limiter.close()  # not its store: it stays open for its owner
        assert await shared.fetch_one("SELECT level FROM rate_limit_counters") == {"level": 1.0}
    finally:
        await shared.close()


def test_the_postgres_limiter_without_any_dsn_is_unavailable(tmp_path: Path) -> None:
    def unavailable() -> Any:
        raise ProviderUnavailable("store:postgres", "no dsn configured")

    context = _context("postgres", PostgresRateLimiterConfig(), tmp_path, {"postgres": unavailable})
    with pytest.raises(ProviderUnavailable, match=r"set \[plugins.rate_limiter.postgres\] dsn"):
        create_postgres_limiter(context)


def test_the_memory_limiter_needs_no_config(tmp_path: Path) -> None:
    assert isinstance(create_memory_limiter(_context("memory", None, tmp_path, {})), MemoryRateLimiter)
