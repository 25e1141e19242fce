"""A rate limiter that keeps its counters in a dict: exact under concurrency within one process, forgotten on
restart (the built-in ``sqlite`` and ``postgres`` limiters persist and count across processes)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gateway.api import RateDecision, RateLimitRule


class DictRateLimiter:
    """``daily``: a count per UTC day. ``token_bucket``: the time the bucket is full again (GCRA), so a refusal
    changes nothing and refills need no floating-point token counts. No ``await`` between reading and writing a
    counter, so concurrent calls cannot both take the last unit."""

    def __init__(self) -> None:
        self._state: dict[tuple[str, str], tuple[str, object]] = {}

    async def hit(self, rule: RateLimitRule, key: str, *, cost: int = 1, now: datetime | None = None) -> RateDecision:
        if cost < 1:
            raise ValueError(f"cost must be at least 1, got {cost}")
        return self._decide(rule, key, cost, now, consume=True)

    async def peek(self, rule: RateLimitRule, key: str, *, now: datetime | None = None) -> RateDecision:
        return self._decide(rule, key, 1, now, consume=False)

    async def close(self) -> None:
        pass

    def _decide(self, rule: RateLimitRule, key: str, cost: int, now: datetime | None, consume: bool) -> RateDecision:
        now = datetime.now(UTC) if now is None else now
        if now.tzinfo is None:
            raise ValueError("now must be timezone-aware")
        now = now.astimezone(UTC)
        kind, value = self._state.get((rule.name, key), (rule.kind, None))
        if kind != rule.kind:
            value = None  # the rule changed kind: start afresh
        if rule.kind == "daily":
            return self._daily(rule, key, cost, now, consume, value)
        return self._bucket(rule, key, cost, now, consume, value)

    def _daily(
        self, rule: RateLimitRule, key: str, cost: int, now: datetime, consume: bool, value: object
    ) -> RateDecision:
        day = now.date().isoformat()
        used = value[1] if isinstance(value, tuple) and value[0] == day else 0
        reset_at = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), UTC)
        allowed = used + cost <= rule.limit
        if allowed and consume:
            used += cost
            self._state[(rule.name, key)] = (rule.kind, (day, used))
        retry_after = None if allowed else (reset_at - now).total_seconds()
        return RateDecision(allowed, rule.limit, rule.limit - used, reset_at, retry_after)

    def _bucket(
        self, rule: RateLimitRule, key: str, cost: int, now: datetime, consume: bool, value: object
    ) -> RateDecision:
        if cost > rule.limit:
            raise ValueError(f"cost {cost} exceeds the bucket's capacity of {rule.limit}")
        interval = timedelta(seconds=rule.period_seconds / rule.limit)  # one unit comes back every interval
        full_at = max(value if isinstance(value, datetime) else now, now)
        allowed = full_at + cost * interval - now <= timedelta(seconds=rule.period_seconds)
        if allowed and consume:
            full_at += cost * interval
            self._state[(rule.name, key)] = (rule.kind, full_at)
        remaining = int((timedelta(seconds=rule.period_seconds) - (full_at - now)) / interval)
        retry_after = None
        if not allowed:
            retry_after = (full_at + cost * interval - now - timedelta(seconds=rule.period_seconds)).total_seconds()
        return RateDecision(allowed, rule.limit, remaining, full_at, retry_after)
