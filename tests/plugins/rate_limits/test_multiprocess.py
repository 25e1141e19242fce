"""Two real processes hit one quota at once: exactly the quota is admitted (SQLite file, PostgreSQL database)."""

from __future__ import annotations

import asyncio
import multiprocessing
import multiprocessing.queues
import multiprocessing.synchronize
import time
from pathlib import Path

import pytest

from gateway.api import RateLimitRule
from gateway.contracts.rate_limiter_contract import T0
from gateway_plugins.rate_limits.persistent import StoreRateLimiter
from gateway_plugins.stores.postgres import PostgresStore
from gateway_plugins.stores.sqlite import SqliteStore

QUOTA = 100
RULE = RateLimitRule(name="shared-quota", kind="daily", limit=QUOTA)


def _open(backend: str, target: str) -> StoreRateLimiter:
    if backend == "sqlite":
        return StoreRateLimiter(SqliteStore(Path(target)))
    return StoreRateLimiter(PostgresStore(target, max_size=10))


def _worker(
    backend: str,
    target: str,
    hits: int,
    ready: multiprocessing.synchronize.Barrier,
    results: multiprocessing.queues.Queue[tuple[int, float, float]],
) -> None:
    """In a child process: open the limiter, wait for the other process, then fire ``hits`` hits at once.

    Reports how many were admitted and when the hits started and ended (the monotonic clock is system-wide).
    """

    async def main() -> tuple[int, float, float]:
        limiter = _open(backend, target)
        try:
            await limiter.peek(RULE, "alice", now=T0)  # connect and migrate before the race starts
            await asyncio.to_thread(ready.wait, 60)
            started = time.monotonic()
            decisions = await asyncio.gather(*(limiter.hit(RULE, "alice", now=T0) for _ in range(hits)))
            return sum(decision.allowed for decision in decisions), started, time.monotonic()
        finally:
            await limiter.close()

    results.put(asyncio.run(main()))


def _race(backend: str, target: str) -> int:
    """Two processes fire QUOTA hits each; returns how many were admitted in all."""
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(2)
    results: multiprocessing.queues.Queue[tuple[int, float, float]] = context.Queue()
    processes = [context.Process(target=_worker, args=(backend, target, QUOTA, ready, results)) for _ in range(2)]
    for process in processes:
        process.start()
    reports = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    (_, start_a, end_a), (_, start_b, end_b) = reports
    assert start_a < end_b and start_b < end_a, "the two processes' hits did not overlap in time"
    return sum(admitted for admitted, _, _ in reports)


@pytest.mark.slow
def test_two_processes_share_a_sqlite_quota_exactly(tmp_path: Path) -> None:
    assert _race("sqlite", str(tmp_path / "limits.sqlite3")) == QUOTA


@pytest.mark.slow
@pytest.mark.postgres
def test_two_processes_share_a_postgres_quota_exactly(postgres_db: str) -> None:
    assert _race("postgres", postgres_db) == QUOTA
