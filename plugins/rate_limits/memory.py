"""The ``memory`` rate limiter: counters in a dict, for a single gateway process (lost on restart)."""

from __future__ import annotations

import threading
from datetime import datetime

from gateway.api import ProviderContext, RateDecision, RateLimitRule
from gateway_plugins.rate_limits.core import Counter, check_hit, evaluate

_SWEEP_EVERY = 4096


class MemoryRateLimiter:
    """:class:`gateway.api.RateLimiter` in process memory.

    A decision is computed and stored without awaiting, under a lock, so concurrent tasks (and threads) never
    both take the last unit. Counters that have gone back to their initial state are swept now and then, so
    memory follows the number of *active* identities.
    """

    def __init__(self) -> None:
        self._counters: dict[tuple[str, str], Counter] = {}
        self._lock = threading.Lock()
        self._hits = 0

    async def hit(self, rule: RateLimitRule, key: str, *, cost: int = 1, now: datetime | None = None) -> RateDecision:
        at = check_hit(rule, cost, now)
        with self._lock:
            outcome = evaluate(rule, self._counters.get((rule.name, key)), at, cost, consume=True)
            if outcome.counter is not None:
                self._counters[(rule.name, key)] = outcome.counter
            self._hits += 1
            if self._hits % _SWEEP_EVERY == 0:
                self._sweep(at)
        return outcome.decision

    async def peek(self, rule: RateLimitRule, key: str, *, now: datetime | None = None) -> RateDecision:
        at = check_hit(rule, 1, now)
        with self._lock:
            return evaluate(rule, self._counters.get((rule.name, key)), at, 1, consume=False).decision

    def _sweep(self, now: datetime) -> None:
        """Forget counters that are back to their initial state (past days, refilled buckets)."""
        at = now.timestamp()
        for name_key in [name_key for name_key, counter in self._counters.items() if counter.expires <= at]:
            del self._counters[name_key]

    def __len__(self) -> int:
        return len(self._counters)

    async def close(self) -> None:
        with self._lock:
            self._counters.clear()


def create_memory_limiter(ctx: ProviderContext) -> MemoryRateLimiter:
    """Provider factory of ``rate_limiter``/``memory``."""
    return MemoryRateLimiter()
