"""Per-route token buckets over real HTTP: tier sizes, ``X-RateLimit-*`` headers, the spec's 429, one bucket per
route and caller, and exact counts under concurrency, across two replica processes on the postgres limiter."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.gateway.rest_replica import serve_replica
from tests.gateway.rest_sample import SCOPES, notes_config
from tests.gateway.rest_support import Served, envelope, serve_notes

HOUR = 3600.0  # buckets refill so slowly that no token comes back during a test


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    tiers = {"search": {"limit": 3, "period_seconds": HOUR}, "probe": {"limit": 2, "period_seconds": HOUR}}
    keys = {"alice": ("acme", SCOPES), "bob": ("acme", SCOPES), "reader": ("acme", ["notes:read"])}
    with serve_notes(notes_config(tmp_path, rest={"tiers": tiers}), keys) as served:
        yield served


def test_headers_count_down_then_the_spec_429(served: Served) -> None:
    before = time.time()
    for remaining in (2, 1, 0):
        response = served.call("GET", "/notes", "alice")
        assert response.status_code == 200
        assert response.headers["X-RateLimit-Limit"] == "3"
        assert response.headers["X-RateLimit-Remaining"] == str(remaining)
        assert before < int(response.headers["X-RateLimit-Reset"]) <= time.time() + HOUR + 1
    refused = served.call("GET", "/notes", "alice")
    error = envelope(refused, 429, "RATE_LIMIT_ERROR")
    wait = HOUR / 3  # one token comes back every period / limit seconds
    assert abs(error["retry_after"] - wait) <= 2 and isinstance(error["retry_after"], int)
    assert error == {
        "code": "RATE_LIMIT_ERROR",
        "message": "Rate limit exceeded",
        "detail": f"Too many requests. Try again in {error['retry_after']} seconds.",
        "correlation_id": error["correlation_id"],
        "retryable": True,
        "retry_after": error["retry_after"],
    }
    assert refused.headers["Retry-After"] == str(error["retry_after"])
    assert refused.headers["X-RateLimit-Limit"] == "3" and refused.headers["X-RateLimit-Remaining"] == "0"


def test_each_route_and_each_caller_has_its_own_bucket(served: Served) -> None:
    for _ in range(3):
        assert served.call("GET", "/notes", "alice").status_code == 200
    assert served.call("GET", "/notes", "alice").status_code == 429
    read = served.call("GET", "/notes/0123abcd", "alice")  # same tier, another route: a bucket of its own
    assert read.status_code == 404 and read.headers["X-RateLimit-Remaining"] == "2"
    assert served.call("GET", "/notes", "bob").headers["X-RateLimit-Remaining"] == "2"


def test_other_tiers_keep_their_default_sizes_and_unlimited_routes_send_no_headers(served: Served) -> None:
    created = served.call("POST", "/notes", "alice", json={"title": "t"})
    assert created.headers["X-RateLimit-Limit"] == "10"  # the spec's index-control tier
    edited = served.call("PUT", f"/notes/{created.json()['id']}", "alice", json={"body": "b"})
    assert edited.headers["X-RateLimit-Limit"] == "30"  # the pack's own tier, at its declared size
    for response in (served.call("GET", "/ping"), served.call("DELETE", f"/notes/{created.json()['id']}", "alice")):
        assert response.status_code in (200, 204)
        assert not any(name.lower().startswith("x-ratelimit") for name in response.headers)


def test_a_refused_scope_or_invalid_input_is_checked_in_that_order(served: Served) -> None:
    for _ in range(5):  # a 403 comes before the bucket: it takes no token
        assert served.call("POST", "/notes", "reader", json={"title": "t"}).status_code == 403
    assert served.call("POST", "/notes", "alice", json={}).headers["X-RateLimit-Remaining"] == "9"  # a 400 takes one
    assert served.call("POST", "/notes", "alice", json={"title": "t"}).headers["X-RateLimit-Remaining"] == "8"


def test_anonymous_callers_of_a_public_route_are_counted_by_address(served: Served) -> None:
    def probe(address: str) -> httpx.Response:
        with httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=30) as client:
            return client.get(served.url("/probe"), headers={"X-API-Key": served.keys["alice"]["X-API-Key"]})

    assert [probe("127.0.0.1").status_code for _ in range(3)] == [200, 200, 429]  # a key changes nothing here
    assert probe("127.0.0.2").headers["X-RateLimit-Remaining"] == "1"


def test_a_failing_limiter_refuses_with_503(tmp_path: Path) -> None:
    config = notes_config(tmp_path)
    config["providers"]["rate_limiter"] = "postgres"
    dead = "postgresql://nobody@127.0.0.1:9/none"  # nothing listens on the discard port
    config["plugins"] = {"rate_limiter": {"postgres": {"dsn": dead, "min_size": 0, "connect_timeout": 1}}}
    with serve_notes(config, {"alice": ("acme", SCOPES)}) as served:
        error = envelope(served.call("GET", "/notes", "alice"), 503, "SERVICE_UNAVAILABLE")
        assert error["retryable"] is True
        assert served.call("GET", "/ping").status_code == 200  # unlimited routes do not need the limiter


async def _fire(urls: list[str], headers: dict[str, str]) -> list[httpx.Response]:
    limits = httpx.Limits(max_connections=len(urls))
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        return await asyncio.gather(*(client.get(url, headers=headers) for url in urls))


def _admitted(responses: list[httpx.Response]) -> int:
    """How many were admitted; each admitted request took its own token (remaining counts down without a gap)."""
    statuses = sorted({r.status_code for r in responses})
    assert statuses == [200, 429], statuses
    ok = [r for r in responses if r.status_code == 200]
    assert sorted(int(r.headers["X-RateLimit-Remaining"]) for r in ok) == list(range(len(ok)))
    return len(ok)


@pytest.mark.parametrize("limiter", ["memory", "sqlite"])
def test_concurrent_requests_take_exactly_the_bucket(tmp_path: Path, limiter: str) -> None:
    limit = 15
    config = notes_config(tmp_path, rest={"tiers": {"search": {"limit": limit, "period_seconds": HOUR}}})
    config["providers"]["rate_limiter"] = limiter
    with serve_notes(config, {"alice": ("acme", SCOPES)}) as served:
        responses = asyncio.run(_fire([served.url("/notes")] * (3 * limit), served.keys["alice"]))
    assert _admitted(responses) == limit


def _replica_config(data_dir: Path, dsn: str, limit: int) -> dict[str, Any]:
    config = notes_config(data_dir, auth="none", rest={"tiers": {"search": {"limit": limit, "period_seconds": HOUR}}})
    config["providers"]["rate_limiter"] = "postgres"
    config["plugins"] = {
        "auth": {"none": {"subject": "alice", "tenant": "acme"}},  # the same caller on both replicas
        "rate_limiter": {"postgres": {"dsn": dsn, "max_size": 8}},
    }
    return config


@pytest.mark.slow
@pytest.mark.postgres
def test_two_replicas_on_the_postgres_limiter_share_each_bucket_exactly(tmp_path: Path, postgres_db: str) -> None:
    limit = 40
    context = multiprocessing.get_context("spawn")
    started = context.Queue()
    stop = context.Event()
    replicas = [
        context.Process(
            target=serve_replica, args=(_replica_config(tmp_path / f"r{i}", postgres_db, limit), started, stop)
        )
        for i in range(2)
    ]
    for replica in replicas:
        replica.start()
    try:
        bases = [started.get(timeout=120) for _ in replicas]
        for base in bases:  # connect and migrate before the race (a token each, from another route's bucket)
            assert httpx.get(f"{base}/api/v1/notes/0123abcd", timeout=60).status_code == 404
        urls = [f"{bases[i % 2]}/api/v1/notes" for i in range(3 * limit)]
        responses = asyncio.run(_fire(urls, {}))
    finally:
        stop.set()
        for replica in replicas:
            replica.join(60)
    assert _admitted(responses) == limit
    by_replica = [sum(r.status_code == 200 for r in responses if str(r.url).startswith(base)) for base in bases]
    assert all(count > 0 for count in by_replica), by_replica  # both replicas admitted part of the one bucket
