"""The contract every :class:`gateway.api.RateLimiter` keeps.

Subclass :class:`RateLimiterContract` and provide the ``open_limiter`` fixture: a callable returning a new limiter
on the *same* storage each time. A limiter whose counters survive a restart runs
:class:`PersistentRateLimiterContract`, which also closes and reopens it. Time is injected through ``now``, so
nothing here sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gateway.api import RateLimiter, RateLimitRule

OpenLimiter = Callable[[], RateLimiter]

T0 = datetime(2025, 3, 10, 12, 0, 0, tzinfo=UTC)
NEXT_MIDNIGHT = datetime(2025, 3, 11, tzinfo=UTC)
DAILY = RateLimitRule(name="daily-search", kind="daily", limit=5)
BUCKET = RateLimitRule(name="per-minute", kind="token_bucket", limit=10, period_seconds=60)  # 1 token / 6 s


class RateLimiterContract:
    """Behaviour every limiter shows, persistent or not."""

    @pytest.fixture
    def anyio_backend(self) -> str:
        return "asyncio"

    @pytest.fixture
    def open_limiter(self) -> OpenLimiter:
        raise NotImplementedError("a subclass provides `open_limiter`")

    @pytest.fixture
    async def limiter(self, open_limiter: OpenLimiter) -> AsyncIterator[RateLimiter]:
        limiter = open_limiter()
        try:
            yield limiter
        finally:
            await limiter.close()

    @pytest.mark.anyio
    async def test_is_a_rate_limiter(self, limiter: RateLimiter) -> None:
        assert isinstance(limiter, RateLimiter)

    # -- daily quotas -------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_daily_quota_admits_limit_calls_then_refuses(self, limiter: RateLimiter) -> None:
        decisions = [await limiter.hit(DAILY, "alice", now=T0 + timedelta(minutes=i)) for i in range(6)]
        assert [d.allowed for d in decisions] == [True] * 5 + [False]
        assert [d.remaining for d in decisions] == [4, 3, 2, 1, 0, 0]
        assert all(d.limit == 5 and d.reset_at == NEXT_MIDNIGHT for d in decisions)
        assert all(d.retry_after is None for d in decisions[:5])
        refused = decisions[5]
        assert refused.retry_after == pytest.approx((NEXT_MIDNIGHT - (T0 + timedelta(minutes=5))).total_seconds())

    @pytest.mark.anyio
    async def test_a_refused_hit_consumes_nothing(self, limiter: RateLimiter) -> None:
        assert (await limiter.hit(DAILY, "alice", cost=3, now=T0)).remaining == 2
        refused = await limiter.hit(DAILY, "alice", cost=3, now=T0)
        assert not refused.allowed and refused.remaining == 2
        assert (await limiter.hit(DAILY, "alice", cost=2, now=T0)).allowed
        assert not (await limiter.hit(DAILY, "alice", now=T0)).allowed

    @pytest.mark.anyio
    async def test_the_day_resets_at_midnight_utc(self, limiter: RateLimiter) -> None:
        last_moment = NEXT_MIDNIGHT - timedelta(microseconds=1)
        for _ in range(5):
            await limiter.hit(DAILY, "alice", now=last_moment - timedelta(hours=1))
        late = await limiter.hit(DAILY, "alice", now=last_moment)
        assert not late.allowed and late.retry_after == pytest.approx(1e-6, abs=1e-3)
        fresh = await limiter.hit(DAILY, "alice", now=NEXT_MIDNIGHT)
        assert fresh.allowed and fresh.remaining == 4
        assert fresh.reset_at == NEXT_MIDNIGHT + timedelta(days=1)

    @pytest.mark.anyio
    async def test_the_day_is_the_utc_day_whatever_the_offset_of_now(self, limiter: RateLimiter) -> None:
        tokyo = timezone(timedelta(hours=9))
        for _ in range(5):  # 2025-03-11 08:00 in Tokyo is still 2025-03-10 in UTC
            assert (await limiter.hit(DAILY, "alice", now=datetime(2025, 3, 11, 8, 0, tzinfo=tokyo))).allowed
        assert not (await limiter.hit(DAILY, "alice", now=datetime(2025, 3, 11, 8, 59, tzinfo=tokyo))).allowed
        assert (await limiter.hit(DAILY, "alice", now=datetime(2025, 3, 11, 9, 0, tzinfo=tokyo))).allowed

    @pytest.mark.anyio
    async def test_identities_and_rules_are_counted_apart(self, limiter: RateLimiter) -> None:
        for _ in range(5):
            await limiter.hit(DAILY, "alice", now=T0)
        assert not (await limiter.hit(DAILY, "alice", now=T0)).allowed
        assert (await limiter.hit(DAILY, "bob", now=T0)).remaining == 4
        other_rule = RateLimitRule(name="daily-submit", kind="daily", limit=5)
        assert (await limiter.hit(other_rule, "alice", now=T0)).remaining == 4

    @pytest.mark.anyio
    async def test_peek_reports_without_consuming(self, limiter: RateLimiter) -> None:
        fresh = await limiter.peek(DAILY, "alice", now=T0)
        assert fresh.allowed and fresh.remaining == 5 and fresh.reset_at == NEXT_MIDNIGHT
        await limiter.hit(DAILY, "alice", cost=5, now=T0)
        for _ in range(3):
            peeked = await limiter.peek(DAILY, "alice", now=T0)
            assert not peeked.allowed and peeked.remaining == 0 and peeked.retry_after == 12 * 3600
        assert (await limiter.peek(DAILY, "alice", now=NEXT_MIDNIGHT)).remaining == 5

    @pytest.mark.anyio
    async def test_a_zero_daily_limit_refuses_everything(self, limiter: RateLimiter) -> None:
        closed = RateLimitRule(name="closed", kind="daily", limit=0)
        decision = await limiter.hit(closed, "alice", now=T0)
        assert not decision.allowed and decision.remaining == 0 and decision.retry_after == 12 * 3600

    # -- token buckets ------------------------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_token_bucket_bursts_to_capacity_and_refills_over_the_period(self, limiter: RateLimiter) -> None:
        burst = [await limiter.hit(BUCKET, "alice", now=T0) for _ in range(11)]
        assert [d.allowed for d in burst] == [True] * 10 + [False]
        assert [d.remaining for d in burst] == [9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 0]
        assert burst[9].reset_at == T0 + timedelta(seconds=60)  # empty: full again after one period
        assert burst[10].retry_after == pytest.approx(6.0)
        half_way = await limiter.hit(BUCKET, "alice", now=T0 + timedelta(seconds=3))
        assert not half_way.allowed and half_way.retry_after == pytest.approx(3.0)
        assert (await limiter.hit(BUCKET, "alice", now=T0 + timedelta(seconds=6))).allowed
        assert not (await limiter.hit(BUCKET, "alice", now=T0 + timedelta(seconds=6))).allowed
        # an idle bucket refills to its capacity and no further
        much_later = [await limiter.hit(BUCKET, "alice", now=T0 + timedelta(hours=1)) for _ in range(11)]
        assert sum(d.allowed for d in much_later) == 10

    @pytest.mark.anyio
    async def test_a_bucket_refills_over_its_own_period(self, limiter: RateLimiter) -> None:
        hourly = RateLimitRule(name="per-hour", kind="token_bucket", limit=2, period_seconds=3600)  # 1 token / 30 min
        assert [(await limiter.hit(hourly, "alice", now=T0)).allowed for _ in range(3)] == [True, True, False]
        assert not (await limiter.hit(hourly, "alice", now=T0 + timedelta(minutes=29))).allowed
        refilled = await limiter.hit(hourly, "alice", now=T0 + timedelta(minutes=30))
        assert refilled.allowed and refilled.limit == 2

    @pytest.mark.anyio
    async def test_two_bucket_rules_count_apart_for_one_identity(self, limiter: RateLimiter) -> None:
        other = RateLimitRule(name="other-per-minute", kind="token_bucket", limit=10, period_seconds=60)
        for _ in range(10):
            await limiter.hit(BUCKET, "alice", now=T0)
        assert not (await limiter.hit(BUCKET, "alice", now=T0)).allowed
        assert (await limiter.hit(other, "alice", now=T0)).remaining == 9
        assert (await limiter.hit(BUCKET, "bob", now=T0)).remaining == 9

    @pytest.mark.anyio
    async def test_a_refused_bucket_hit_consumes_nothing(self, limiter: RateLimiter) -> None:
        for _ in range(10):
            await limiter.hit(BUCKET, "alice", now=T0)
        for second in (1, 2, 3, 4, 5, 5.9):  # refused again and again: no token may go missing
            assert not (await limiter.hit(BUCKET, "alice", now=T0 + timedelta(seconds=second))).allowed
        assert (await limiter.hit(BUCKET, "alice", now=T0 + timedelta(seconds=6))).allowed

    @pytest.mark.anyio
    async def test_bucket_peek_and_cost(self, limiter: RateLimiter) -> None:
        assert (await limiter.hit(BUCKET, "alice", cost=4, now=T0)).remaining == 6
        peeked = await limiter.peek(BUCKET, "alice", now=T0 + timedelta(seconds=12))
        assert peeked.allowed and peeked.remaining == 8
        assert peeked.reset_at == T0 + timedelta(seconds=24)
        assert (await limiter.peek(BUCKET, "alice", now=T0 + timedelta(seconds=12))).remaining == 8

    @pytest.mark.anyio
    async def test_a_rule_that_changes_kind_starts_afresh(self, limiter: RateLimiter) -> None:
        await limiter.hit(DAILY, "alice", cost=5, now=T0)
        as_bucket = RateLimitRule(name=DAILY.name, kind="token_bucket", limit=3, period_seconds=60)
        assert (await limiter.hit(as_bucket, "alice", now=T0)).remaining == 2

    @pytest.mark.anyio
    async def test_invalid_hits_are_refused_loudly(self, limiter: RateLimiter) -> None:
        with pytest.raises(ValueError, match="cost"):
            await limiter.hit(DAILY, "alice", cost=0, now=T0)
        with pytest.raises(ValueError, match="aware"):
            await limiter.hit(DAILY, "alice", now=datetime(2025, 1, 1))
        with pytest.raises(ValueError, match="capacity"):
            await limiter.hit(BUCKET, "alice", cost=11, now=T0)

    @pytest.mark.anyio
    async def test_without_now_the_clock_is_used(self, limiter: RateLimiter) -> None:
        decision = await limiter.hit(DAILY, "alice")
        today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        assert decision.allowed and decision.reset_at in (today + timedelta(days=1), today + timedelta(days=2))

    # -- concurrency and persistence ----------------------------------------------------------------------------

    @pytest.mark.anyio
    async def test_concurrent_hits_admit_exactly_the_quota(self, limiter: RateLimiter) -> None:
        rule = RateLimitRule(name="race", kind="daily", limit=25)
        decisions = await asyncio.gather(*(limiter.hit(rule, "alice", now=T0) for _ in range(75)))
        assert sum(d.allowed for d in decisions) == 25
        assert sorted(d.remaining for d in decisions if d.allowed) == list(range(25))

    @pytest.mark.anyio
    async def test_concurrent_first_hits_of_many_identities(self, limiter: RateLimiter) -> None:
        rule = RateLimitRule(name="fresh", kind="token_bucket", limit=2, period_seconds=60)
        decisions = await asyncio.gather(*(limiter.hit(rule, f"user-{i % 10}", now=T0) for i in range(40)))
        assert sum(d.allowed for d in decisions) == 20  # 2 for each of the 10 identities


class PersistentRateLimiterContract(RateLimiterContract):
    """The contract of a limiter whose counters outlive it (closing and reopening on the same storage)."""

    @pytest.mark.anyio
    async def test_counts_survive_a_restart(self, open_limiter: OpenLimiter) -> None:
        first = open_limiter()
        try:
            await first.hit(DAILY, "alice", cost=3, now=T0)
            for _ in range(10):
                await first.hit(BUCKET, "alice", now=T0)
        finally:
            await first.close()
        second = open_limiter()
        try:
            assert (await second.hit(DAILY, "alice", now=T0 + timedelta(hours=1))).remaining == 1
            assert not (await second.hit(BUCKET, "alice", now=T0 + timedelta(seconds=1))).allowed
            assert (await second.hit(DAILY, "alice", now=NEXT_MIDNIGHT)).remaining == 4  # the next day is new
        finally:
            await second.close()
