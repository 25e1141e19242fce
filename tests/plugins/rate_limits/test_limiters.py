"""Each built-in rate limiter runs the shared contract; PostgreSQL for real."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from gateway.contracts.rate_limiter_contract import (
    DAILY,
    T0,
    OpenLimiter,
    PersistentRateLimiterContract,
    RateLimiterContract,
)
from gateway_plugins.rate_limits.memory import MemoryRateLimiter
from gateway_plugins.rate_limits.persistent import StoreRateLimiter
from gateway_plugins.stores.postgres import PostgresStore
from gateway_plugins.stores.sqlite import SqliteStore


class TestMemoryLimiter(RateLimiterContract):
    @pytest.fixture
    def open_limiter(self) -> OpenLimiter:
        return MemoryRateLimiter


class TestSqliteLimiter(PersistentRateLimiterContract):
    @pytest.fixture
    def open_limiter(self, tmp_path: Path) -> OpenLimiter:
        return lambda: StoreRateLimiter(SqliteStore(tmp_path / "limits.sqlite3"))


@pytest.mark.postgres
class TestPostgresLimiter(PersistentRateLimiterContract):
    @pytest.fixture
    def open_limiter(self, postgres_db: str) -> OpenLimiter:
        return lambda: StoreRateLimiter(PostgresStore(postgres_db, max_size=8))


@pytest.mark.anyio
async def test_memory_forgets_counters_back_at_their_initial_state() -> None:
    limiter = MemoryRateLimiter()
    for i in range(100):
        await limiter.hit(DAILY, f"user-{i}", now=T0)
    assert len(limiter) == 100
    tomorrow = T0 + timedelta(days=1)
    for _ in range(4096):  # the sweep runs every 4096 hits
        await limiter.hit(DAILY, "regular", now=tomorrow)
    assert len(limiter) == 1


@pytest.mark.anyio
async def test_prune_deletes_only_expired_counters(tmp_path: Path) -> None:
    limiter = StoreRateLimiter(SqliteStore(tmp_path / "limits.sqlite3"))
    try:
        await limiter.hit(DAILY, "yesterday", now=T0 - timedelta(days=1))
        await limiter.hit(DAILY, "today", now=T0)
        assert await limiter.prune(T0) == 1
        assert (await limiter.peek(DAILY, "today", now=T0)).remaining == 4
    finally:
        await limiter.close()
