"""Relational stores and rate limiters: throughput on this machine, in one table.

    python bench/storage.py [--seconds 2] [--tasks 8]

* Stores (``sqlite``, ``postgres``): single-row inserts, each committed on its own (``store.execute``), and point
  reads by primary key (``store.fetch_one``), from 1 task and from ``--tasks`` concurrent tasks.
* Rate limiters (``memory``, ``sqlite``, ``postgres``): ``hit()`` on a daily rule over 1000 identities.

PostgreSQL is a throwaway server started here the way the test fixture starts it (``tests/fakes/postgres.py``),
with fsync on and ``synchronous_commit = off``, which matches the durability of SQLite's WAL with
``synchronous = NORMAL`` (no fsync per commit; a crash of the machine may lose the last commits, never
consistency). The client pool holds ``--tasks`` connections, on the same host (loopback TCP).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import structlog

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from gateway.api import Migration, RateLimiter, RateLimitRule, RelationalStore  # noqa: E402
from gateway_plugins.rate_limits.memory import MemoryRateLimiter  # noqa: E402
from gateway_plugins.rate_limits.persistent import StoreRateLimiter  # noqa: E402
from gateway_plugins.stores.postgres import PostgresStore  # noqa: E402
from gateway_plugins.stores.sqlite import SqliteStore  # noqa: E402
from tests.fakes.postgres import PostgresServer  # noqa: E402

TABLE = Migration(
    1, "bench", "CREATE TABLE bench (id INTEGER PRIMARY KEY, name TEXT NOT NULL, payload JSONB, n DOUBLE PRECISION)"
)
RULE = RateLimitRule(name="bench-daily", kind="daily", limit=10**9)
IDENTITIES = 1000

Operation = Callable[[int], Awaitable[object]]


async def rate(operation: Operation, tasks: int, seconds: float) -> float:
    """Operations per second of ``tasks`` concurrent loops calling ``operation(i)`` with distinct ``i``."""
    counter = itertools.count()
    done = 0
    deadline = time.perf_counter() + seconds

    async def loop() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await operation(next(counter))
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(loop() for _ in range(tasks)))
    return done / (time.perf_counter() - started)


async def bench_store(name: str, store: RelationalStore, tasks: int, seconds: float) -> list[tuple[str, ...]]:
    await store.migrate("bench", [TABLE])
    offset = itertools.count(0, 10_000_000)

    def insert(base: int) -> Operation:
        return lambda i: store.execute(
            "INSERT INTO bench (id, name, payload, n) VALUES (:id, :name, :payload, :n)",
            {"id": base + i, "name": f"row {i}", "payload": {"i": i, "tags": ["a", "b"]}, "n": i / 3},
        )

    single_insert = await rate(insert(next(offset)), 1, seconds)
    many_insert = await rate(insert(next(offset)), tasks, seconds)
    row = await store.fetch_one("SELECT COUNT(*) AS n, MAX(id) AS top FROM bench")
    assert row is not None and row["n"] > 0
    ids = [r["id"] for r in await store.fetch_all("SELECT id FROM bench ORDER BY id LIMIT 5000")]

    async def read(i: int) -> object:
        found = await store.fetch_one(
            "SELECT id, name, payload, n FROM bench WHERE id = :id", {"id": ids[i % len(ids)]}
        )
        assert found is not None
        return found

    single_read = await rate(read, 1, seconds)
    many_read = await rate(read, tasks, seconds)
    return [
        (f"store {name}", "insert (own commit)", f"{single_insert:,.0f}", f"{many_insert:,.0f}"),
        (f"store {name}", "point read", f"{single_read:,.0f}", f"{many_read:,.0f}"),
    ]


async def bench_limiter(name: str, limiter: RateLimiter, tasks: int, seconds: float) -> list[tuple[str, ...]]:
    await limiter.peek(RULE, "warm-up")  # connect and migrate outside the measurement

    async def check(i: int) -> object:
        decision = await limiter.hit(RULE, f"user-{i % IDENTITIES}")
        assert decision.allowed
        return decision

    try:
        single = await rate(check, 1, seconds)
        many = await rate(check, tasks, seconds)
    finally:
        await limiter.close()
    return [(f"rate limiter {name}", "hit (daily rule)", f"{single:,.0f}", f"{many:,.0f}")]


def print_table(rows: list[tuple[str, ...]], tasks: int) -> None:
    header = ("backend", "operation", "ops/s, 1 task", f"ops/s, {tasks} tasks")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * width for width in widths)
    print(
        "  ".join(
            cell.ljust(width) if i < 2 else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(header, widths, strict=True))
        )
    )
    print(line)
    for row in rows:
        print(
            "  ".join(
                cell.ljust(width) if i < 2 else cell.rjust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=True))
            )
        )


async def main(seconds: float, tasks: int) -> None:
    rows: list[tuple[str, ...]] = []
    with (
        tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp,
        PostgresServer.start(durable=True, settings={"synchronous_commit": "off"}) as server,
    ):
        sqlite_store = SqliteStore(Path(tmp) / "store.sqlite3")
        try:
            rows += await bench_store("sqlite", sqlite_store, tasks, seconds)
        finally:
            await sqlite_store.close()
        with server.database() as dsn:
            postgres_store = PostgresStore(dsn, min_size=tasks, max_size=tasks)
            try:
                rows += await bench_store("postgres", postgres_store, tasks, seconds)
            finally:
                await postgres_store.close()
        rows += await bench_limiter("memory", MemoryRateLimiter(), tasks, seconds)
        rows += await bench_limiter(
            "sqlite", StoreRateLimiter(SqliteStore(Path(tmp) / "limits.sqlite3")), tasks, seconds
        )
        with server.database() as dsn:
            limiter = StoreRateLimiter(PostgresStore(dsn, min_size=tasks, max_size=tasks))
            rows += await bench_limiter("postgres", limiter, tasks, seconds)
    print_table(rows, tasks)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="duration of each measurement")
    parser.add_argument("--tasks", type=int, default=8, help="concurrent asyncio tasks (and pooled connections)")
    options = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    asyncio.run(main(options.seconds, options.tasks))
