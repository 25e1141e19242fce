"""The arithmetic of the two rule kinds, shared by every limiter: given the stored state, decide a hit.

A limiter stores one :class:`Counter` per (rule, identity) and does the reading, deciding and writing atomically;
this module only decides. ``level``/``stamp`` mean, for ``daily``: calls used / the start of their UTC day; for
``token_bucket``: tokens left / when they were counted. Times are POSIX seconds.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from gateway.api import RateDecision, RateLimitRule

_EPSILON = 1e-9
"""Float slack when comparing tokens, so 0.1 + 0.2 tokens count as 0.3."""


class Counter(NamedTuple):
    kind: str
    level: float
    stamp: float
    expires: float
    """When the counter is back to its initial state (a new day, a full bucket) and may be forgotten."""


class Outcome(NamedTuple):
    decision: RateDecision
    counter: Counter | None
    """The state to store, or ``None`` when nothing changed (a refused hit, a peek)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


def check_hit(rule: RateLimitRule, cost: int, now: datetime | None) -> datetime:
    """Validate a hit's arguments; return ``now`` (aware UTC)."""
    if cost < 1:
        raise ValueError(f"cost must be at least 1 (got {cost})")
    if rule.limit < 0:
        raise ValueError(f"rule {rule.name!r}: limit must not be negative")
    if rule.kind == "token_bucket":
        if rule.limit < 1 or rule.period_seconds <= 0:
            raise ValueError(f"rule {rule.name!r}: a token bucket needs limit >= 1 and period_seconds > 0")
        if cost > rule.limit:
            raise ValueError(f"rule {rule.name!r}: cost {cost} exceeds the bucket's capacity {rule.limit}")
    elif rule.kind != "daily":
        raise ValueError(f"rule {rule.name!r}: unknown kind {rule.kind!r}")
    if now is None:
        return utc_now()
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("`now` must be an aware datetime")
    return now.astimezone(UTC)


def day_start(now: datetime) -> datetime:
    return now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


def evaluate(rule: RateLimitRule, counter: Counter | None, now: datetime, cost: int, *, consume: bool) -> Outcome:
    """Decide a hit of ``cost`` against ``counter`` (``consume=False``: a peek, asking about one more call)."""
    if counter is not None and counter.kind != rule.kind:
        counter = None  # the rule changed kind under the same name: start afresh
    if rule.kind == "daily":
        return _daily(rule, counter, now, cost, consume)
    return _bucket(rule, counter, now, cost, consume)


def _daily(rule: RateLimitRule, counter: Counter | None, now: datetime, cost: int, consume: bool) -> Outcome:
    start = day_start(now)
    reset_at = start + timedelta(days=1)
    used = int(counter.level) if counter is not None and counter.stamp == start.timestamp() else 0
    allowed = used + cost <= rule.limit
    if allowed and consume:
        used += cost
    decision = RateDecision(
        allowed=allowed,
        limit=rule.limit,
        remaining=max(0, rule.limit - used),
        reset_at=reset_at,
        retry_after=None if allowed else (reset_at - now).total_seconds(),
    )
    changed = allowed and consume
    return Outcome(decision, Counter(rule.kind, used, start.timestamp(), reset_at.timestamp()) if changed else None)


def _bucket(rule: RateLimitRule, counter: Counter | None, now: datetime, cost: int, consume: bool) -> Outcome:
    capacity = float(rule.limit)
    rate = capacity / rule.period_seconds  # tokens per second
    at = now.timestamp()
    if counter is None:
        tokens = capacity
    else:
        tokens = min(capacity, counter.level + max(0.0, at - counter.stamp) * rate)
    allowed = tokens + _EPSILON >= cost
    if allowed and consume:
        tokens = max(0.0, tokens - cost)
    full_at = at + (capacity - tokens) / rate
    decision = RateDecision(
        allowed,
        rule.limit,
        math.floor(tokens + _EPSILON),
        datetime.fromtimestamp(full_at, UTC),
        None if allowed else (cost - tokens) / rate,
    )
    return Outcome(decision, Counter(rule.kind, tokens, at, full_at) if allowed and consume else None)
