"""Rate-limiter protocol: fixed daily quotas and token buckets, keyed by rule and identity."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable


@dataclass(frozen=True)
class RateLimitRule:
    """A limit shared by a group of tools.

    ``daily``: ``limit`` calls per identity per UTC day, reset at midnight UTC.
    ``token_bucket``: bursts up to ``limit``, refilled at ``limit`` tokens per ``period_seconds``.
    """

    name: str
    kind: Literal["daily", "token_bucket"]
    limit: int
    period_seconds: float = 60.0


@dataclass(frozen=True)
class RateDecision:
    allowed: bool
    limit: int
    remaining: int
    reset_at: datetime
    """When the quota is whole again (daily: next midnight UTC)."""
    retry_after: float | None = None
    """Seconds until a refused call may succeed; ``None`` when allowed."""


@runtime_checkable
class RateLimiter(Protocol):
    """Counts hits atomically: under concurrency a quota of N admits exactly N calls."""

    async def hit(self, rule: RateLimitRule, key: str, *, cost: int = 1, now: datetime | None = None) -> RateDecision:
        """Consume ``cost`` if allowed; a refused hit consumes nothing."""

    async def peek(self, rule: RateLimitRule, key: str, *, now: datetime | None = None) -> RateDecision:
        """The state without consuming."""

    async def close(self) -> None: ...
