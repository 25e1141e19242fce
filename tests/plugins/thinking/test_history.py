"""Histories per caller identity, and their bounds: thoughts, branches, identities (LRU) and idle time (TTL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.api import CallContext, PackContext, Principal
from gateway_plugins.thinking.config import HistoryLimits, ThinkingConfig
from gateway_plugins.thinking.history import BoundedCache, Histories, ThoughtRecord
from gateway_plugins.thinking.models import ThoughtInput
from gateway_plugins.thinking.pack import ThinkingPack

pytestmark = pytest.mark.anyio


def pack(tmp_path: Path, **config: Any) -> ThinkingPack:
    def unavailable(*_: Any) -> Any:
        raise AssertionError("no service is needed without audits")

    settings = ThinkingConfig.model_validate(config)
    context = PackContext(
        name="thinking", config=settings, data_dir=tmp_path, provider=unavailable, embeddings=unavailable,
        sanitization=unavailable,
    )  # fmt: skip
    return ThinkingPack(settings, context)


def caller(subject: str, tenant: str | None = None) -> CallContext:
    return CallContext(correlation_id="c", principal=Principal(subject=subject, tenant=tenant), transport="http")


def step(number: int, **extra: Any) -> ThoughtInput:
    return ThoughtInput(
        thought=f"thought {number}", nextThoughtNeeded=True, thoughtNumber=number, totalThoughts=9, **extra
    )


async def test_identities_never_see_each_others_thoughts(tmp_path: Path) -> None:
    thinking = pack(tmp_path)
    alice, bob, bob_elsewhere = caller("alice"), caller("bob"), caller("bob", tenant="acme")
    for number in (1, 2, 3):
        await thinking.think(step(number), alice)
    await thinking.think(step(1, branchFromThought=1, branchId="alice-only"), alice)
    first_bob = await thinking.think(step(1), bob)
    other_tenant = await thinking.think(step(1), bob_elsewhere)
    alice_now = await thinking.think(step(5), alice)
    assert first_bob.thoughtHistoryLength == 1 and first_bob.branches == []
    assert other_tenant.thoughtHistoryLength == 1  # same subject, another tenant: another identity
    assert alice_now.thoughtHistoryLength == 5 and alice_now.branches == ["alice-only"]


async def test_a_history_keeps_its_newest_thoughts(tmp_path: Path) -> None:
    thinking = pack(tmp_path, history={"max_thoughts": 3})
    lengths = [(await thinking.think(step(n), caller("a"))).thoughtHistoryLength for n in range(1, 6)]
    assert lengths == [1, 2, 3, 3, 3]


def test_branches_beyond_the_limit_drop_the_least_recently_used() -> None:
    histories = Histories(HistoryLimits(max_branches=2))

    def branch(name: str) -> list[str]:
        record = ThoughtRecord(2, 3, True, branch_from_thought=1, branch_id=name)
        return histories.record("me", record).branch_ids()

    assert branch("a") == ["a"]
    assert branch("b") == ["a", "b"]
    assert branch("a") == ["a", "b"]  # listed in first-seen order, as Object.keys() lists them
    assert branch("c") == ["a", "c"]  # "b" was the least recently used


def test_identities_beyond_the_limit_drop_the_least_recently_used() -> None:
    histories = Histories(HistoryLimits(max_histories=2))
    for identity in ("a", "b", "a", "c"):
        histories.record(identity, ThoughtRecord(1, 1, False))
    assert "a" in histories and "c" in histories and "b" not in histories and len(histories) == 2


def test_idle_histories_expire() -> None:
    now = [0.0]
    histories = Histories(HistoryLimits(ttl_seconds=60), clock=lambda: now[0])
    histories.record("idle", ThoughtRecord(1, 1, False))
    now[0] = 30
    histories.record("busy", ThoughtRecord(1, 1, False))
    now[0] = 61
    kept = histories.record("busy", ThoughtRecord(2, 2, False))
    assert "idle" not in histories and len(kept.thoughts) == 2
    now[0] = 200
    fresh = histories.record("idle", ThoughtRecord(1, 1, False))
    assert len(fresh.thoughts) == 1 and len(histories) == 1


def test_bounded_cache_get_does_not_resurrect_expired_entries() -> None:
    now = [0.0]
    cache: BoundedCache[str, int] = BoundedCache(10, 5, clock=lambda: now[0])
    cache.get_or_create("k", lambda: 1)
    assert cache.get("k") == 1
    now[0] = 6
    assert cache.get("k") is None and len(cache) == 0


async def test_many_callers_stay_within_the_bounds(tmp_path: Path) -> None:
    thinking = pack(tmp_path, history={"max_histories": 50, "max_thoughts": 10})
    for index in range(500):
        await thinking.think(step(index % 20 + 1), caller(f"client-{index % 120}"))
    assert len(thinking._histories) == 50
