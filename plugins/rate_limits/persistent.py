"""Persistent rate limiters on a :class:`gateway.api.RelationalStore`: ``sqlite`` and ``postgres``.

One row per (rule, identity) in ``rate_limit_counters``. A hit reads, decides and writes that row in one
transaction that excludes every other writer of the row: on SQLite the transaction starts with ``BEGIN
IMMEDIATE`` (the whole database's write lock, across processes); on PostgreSQL the row is read ``FOR UPDATE``,
and the first hit of an identity inserts with ``ON CONFLICT DO NOTHING`` and re-reads if a concurrent first hit
won. Either way a quota of N admits exactly N calls, however many processes or replicas share it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path

import structlog
from pydantic import BaseModel, ConfigDict, Field

from gateway.api import (
    STORE,
    Migration,
    ProviderContext,
    ProviderUnavailable,
    RateDecision,
    RateLimitRule,
    RelationalStore,
    Transaction,
)
from gateway.api.stores import Row
from gateway_plugins.rate_limits.core import Counter, check_hit, evaluate, utc_now
from gateway_plugins.stores.postgres import PostgresStoreConfig, postgres_store_from_config
from gateway_plugins.stores.sqlite import SqliteStore

log = structlog.get_logger(__name__)

NAMESPACE = "rate_limits"
MIGRATIONS = (
    Migration(
        1,
        "rate_limit_counters",
        """
        CREATE TABLE rate_limit_counters (
            rule TEXT NOT NULL,
            subject TEXT NOT NULL,
            kind TEXT NOT NULL,
            level DOUBLE PRECISION NOT NULL,
            stamp DOUBLE PRECISION NOT NULL,
            expires DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (rule, subject)
        );
        CREATE INDEX rate_limit_counters_expires ON rate_limit_counters (expires)
        """,
    ),
)

_SELECT = "SELECT kind, level, stamp, expires FROM rate_limit_counters WHERE rule = :rule AND subject = :subject"
_INSERT_IF_ABSENT = (
    "INSERT INTO rate_limit_counters (rule, subject, kind, level, stamp, expires)"
    " VALUES (:rule, :subject, :kind, :level, :stamp, :expires) ON CONFLICT (rule, subject) DO NOTHING"
)
_UPDATE = (
    "UPDATE rate_limit_counters SET kind = :kind, level = :level, stamp = :stamp, expires = :expires"
    " WHERE rule = :rule AND subject = :subject"
)
_PRUNE_EVERY = 10_000


class StoreRateLimiter:
    """:class:`gateway.api.RateLimiter` keeping its counters in a relational store (migrated on first use)."""

    def __init__(self, store: RelationalStore, *, owns_store: bool = True) -> None:
        self._store = store
        self._owns_store = owns_store
        self._lock_clause = " FOR UPDATE" if store.dialect == "postgres" else ""
        self._ready = False
        self._ready_lock = asyncio.Lock()
        self._hits = 0

    async def _ensure_ready(self) -> None:
        if not self._ready:
            async with self._ready_lock:
                if not self._ready:
                    await self._store.migrate(NAMESPACE, MIGRATIONS)
                    self._ready = True

    async def hit(self, rule: RateLimitRule, key: str, *, cost: int = 1, now: datetime | None = None) -> RateDecision:
        at = check_hit(rule, cost, now)
        await self._ensure_ready()
        async with self._store.transaction() as tx:
            decision = await self._decide(tx, rule, key, at, cost)
        self._hits += 1
        if self._hits % _PRUNE_EVERY == 0:
            await self.prune(at)
        return decision

    async def _decide(self, tx: Transaction, rule: RateLimitRule, key: str, at: datetime, cost: int) -> RateDecision:
        where = {"rule": rule.name, "subject": key}
        select = _SELECT + self._lock_clause
        row = await tx.fetch_one(select, where)
        if row is None:
            outcome = evaluate(rule, None, at, cost, consume=True)
            if outcome.counter is None or await tx.execute(_INSERT_IF_ABSENT, where | _params(outcome.counter)):
                return outcome.decision
            row = await tx.fetch_one(select, where)  # a concurrent first hit of this identity won the insert
            if row is None:
                raise RuntimeError(f"rate-limit counter {rule.name}/{key} vanished inside its transaction")
        outcome = evaluate(rule, _counter(row), at, cost, consume=True)
        if outcome.counter is not None:
            await tx.execute(_UPDATE, where | _params(outcome.counter))
        return outcome.decision

    async def peek(self, rule: RateLimitRule, key: str, *, now: datetime | None = None) -> RateDecision:
        at = check_hit(rule, 1, now)
        await self._ensure_ready()
        row = await self._store.fetch_one(_SELECT, {"rule": rule.name, "subject": key})
        return evaluate(rule, _counter(row) if row else None, at, 1, consume=False).decision

    async def prune(self, now: datetime | None = None) -> int:
        """Delete the counters that are back to their initial state (past days, refilled buckets)."""
        await self._ensure_ready()
        at = (now or utc_now()).timestamp()
        removed = await self._store.execute("DELETE FROM rate_limit_counters WHERE expires <= :at", {"at": at})
        log.debug("rate-limit counters pruned", removed=removed)
        return removed

    async def close(self) -> None:
        if self._owns_store:
            await self._store.close()


def _counter(row: Row) -> Counter:
    return Counter(kind=row["kind"], level=row["level"], stamp=row["stamp"], expires=row["expires"])


def _params(counter: Counter) -> dict[str, object]:
    return {"kind": counter.kind, "level": counter.level, "stamp": counter.stamp, "expires": counter.expires}


class SqliteRateLimiterConfig(BaseModel):
    """``[plugins.rate_limiter.sqlite]``."""

    model_config = ConfigDict(extra="forbid")

    path: str = "rate_limits.sqlite3"
    """The counters' own database file; a relative path is taken from the provider's data dir."""
    busy_timeout: float = Field(default=10.0, gt=0)
    """Seconds to wait for another process's write lock."""


class PostgresRateLimiterConfig(PostgresStoreConfig):
    """``[plugins.rate_limiter.postgres]``: the ``store``/``postgres`` options, for the counters' own pool.

    Without ``dsn`` the counters live in the database of the ``postgres`` store provider, sharing its pool.
    """

    max_size: int = Field(default=4, ge=1)


def create_sqlite_limiter(ctx: ProviderContext) -> StoreRateLimiter:
    """Provider factory of ``rate_limiter``/``sqlite``."""
    config = ctx.config if isinstance(ctx.config, SqliteRateLimiterConfig) else SqliteRateLimiterConfig()
    path = Path(config.path).expanduser()
    store = SqliteStore(path if path.is_absolute() else ctx.data_dir / path, busy_timeout=config.busy_timeout)
    return StoreRateLimiter(store, owns_store=True)


def create_postgres_limiter(ctx: ProviderContext) -> StoreRateLimiter:
    """Provider factory of ``rate_limiter``/``postgres``."""
    config = ctx.config if isinstance(ctx.config, PostgresRateLimiterConfig) else PostgresRateLimiterConfig()
    if config.dsn is not None:
        return StoreRateLimiter(postgres_store_from_config(config, provider=f"{ctx.kind}:{ctx.name}"))
    try:
        shared = ctx.provider(STORE, "postgres")
    except ProviderUnavailable as exc:
        raise ProviderUnavailable(
            f"{ctx.kind}:{ctx.name}",
            "no dsn: set [plugins.rate_limiter.postgres] dsn, or configure the postgres store to share its "
            f"database ({exc.reason})",
        ) from exc
    return StoreRateLimiter(shared, owns_store=False)
