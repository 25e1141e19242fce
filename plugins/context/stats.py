"""Search performance per tenant over the last minutes, for ``GET /status``: mean latency, searches per minute,
error rate.

Kept in the memory of each process (a replica reports what it served), over a sliding window of
:data:`WINDOW_SECONDS`; bounded in memory (the most recent searches of the most recently active tenants). A search
refused for invalid input is the caller's mistake, not a failure of the engine: it is not counted.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from gateway.api import ValidationFailed

__all__ = ["SearchPerformance", "SearchStats"]

WINDOW_SECONDS = 300.0


@dataclass(frozen=True)
class SearchPerformance:
    avg_query_latency_ms: float
    queries_per_minute: float
    error_rate: float


class SearchStats:
    def __init__(self, *, window_seconds: float = WINDOW_SECONDS, per_tenant: int = 10_000, tenants: int = 10_000):
        self.window = window_seconds
        self._per_tenant = per_tenant
        self._tenants = tenants
        self._seen: OrderedDict[str, deque[tuple[float, float, bool]]] = OrderedDict()

    def record(self, tenant: str, milliseconds: float, *, failed: bool = False, at: float | None = None) -> None:
        events = self._seen.get(tenant)
        if events is None:
            events = self._seen[tenant] = deque(maxlen=self._per_tenant)
            while len(self._seen) > self._tenants:
                self._seen.popitem(last=False)
        self._seen.move_to_end(tenant)
        events.append((time.monotonic() if at is None else at, milliseconds, failed))

    @contextmanager
    def timed(self, tenant: str) -> Iterator[None]:
        """Record the search run inside the block: a failure when it raises (invalid input and a cancelled call
        are not recorded at all)."""
        started = time.perf_counter()
        try:
            yield
        except ValidationFailed:
            raise
        except Exception:
            self.record(tenant, (time.perf_counter() - started) * 1000, failed=True)
            raise
        self.record(tenant, (time.perf_counter() - started) * 1000)

    def summary(self, tenant: str, *, now: float | None = None) -> SearchPerformance:
        now = time.monotonic() if now is None else now
        recent = [event for event in self._seen.get(tenant, ()) if now - event[0] <= self.window]
        if not recent:
            return SearchPerformance(0.0, 0.0, 0.0)
        return SearchPerformance(
            avg_query_latency_ms=round(sum(ms for _, ms, _ in recent) / len(recent), 1),
            queries_per_minute=round(len(recent) / (self.window / 60.0), 2),
            error_rate=round(sum(failed for _, _, failed in recent) / len(recent), 4),
        )
