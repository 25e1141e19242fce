"""Search performance per tenant over a sliding window, bounded in memory."""

from __future__ import annotations

import pytest

from gateway.api import ValidationFailed
from gateway_plugins.context.stats import SearchStats


def test_the_window_gives_latency_rate_and_errors_per_tenant() -> None:
    stats = SearchStats(window_seconds=60.0)
    for at, ms, failed in ((0.0, 100.0, False), (30.0, 300.0, True), (50.0, 200.0, False)):
        stats.record("acme", ms, failed=failed, at=at)
    stats.record("globex", 9.0, at=50.0)
    summary = stats.summary("acme", now=55.0)
    assert (summary.avg_query_latency_ms, summary.queries_per_minute, summary.error_rate) == (200.0, 3.0, 0.3333)
    later = stats.summary("acme", now=75.0)  # the first search left the window
    assert (later.avg_query_latency_ms, later.queries_per_minute, later.error_rate) == (250.0, 2.0, 0.5)
    assert stats.summary("globex", now=55.0).avg_query_latency_ms == 9.0
    assert stats.summary("nobody").queries_per_minute == 0.0


def test_failures_count_but_invalid_input_does_not() -> None:
    stats = SearchStats()
    with stats.timed("acme"):
        pass
    with pytest.raises(ValidationFailed), stats.timed("acme"):
        raise ValidationFailed("bad query")
    with pytest.raises(RuntimeError), stats.timed("acme"):
        raise RuntimeError("store down")
    summary = stats.summary("acme")
    assert summary.queries_per_minute == pytest.approx(2 / 5) and summary.error_rate == 0.5


def test_memory_is_bounded() -> None:
    stats = SearchStats(per_tenant=3, tenants=2)
    for n in range(10):
        stats.record("acme", float(n), at=0.0)
    assert stats.summary("acme", now=0.0).avg_query_latency_ms == 8.0  # the last three: 7, 8, 9
    stats.record("globex", 1.0, at=0.0)
    stats.record("initech", 1.0, at=0.0)  # a third tenant: the least recently active one goes
    assert stats.summary("acme", now=0.0).queries_per_minute == 0.0
    assert stats.summary("globex", now=0.0).avg_query_latency_ms == 1.0
