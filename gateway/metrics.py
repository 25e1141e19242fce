"""Prometheus metrics of one gateway: calls, errors and latency per tool, pack and upstream; upstream states.

One :class:`prometheus_client.CollectorRegistry` per runtime (no process-global registry, so two gateways in one
process, or two tests, never share counters). Labels carry only names the operator configured (tool, pack,
upstream, error code): never arguments, results, identities or secrets, the same rule as the call log.

``GET /metrics`` serves :meth:`GatewayMetrics.render` (see :mod:`gateway.http`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from gateway.api.tools import UpstreamStatus

__all__ = ["CONTENT_TYPE", "GatewayMetrics", "ToolMetrics"]

CONTENT_TYPE = CONTENT_TYPE_LATEST
LABELS = ("tool", "pack", "upstream")
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
STATES = ("up", "down", "starting", "idle")


@dataclass(frozen=True)
class ToolMetrics:
    """The metric children of one served tool, bound once (a label lookup per call would cost more)."""

    calls: Any
    latency: Any
    errors: Callable[[str], Any]
    codes: set[str] = field(default_factory=set)
    """The error codes counted so far for these labels (their series go when the tool does)."""

    def observe(self, seconds: float, error_code: str | None) -> None:
        self.calls.inc()
        self.latency.observe(seconds)
        if error_code is not None:
            self.codes.add(error_code)
            self.errors(error_code).inc()


class _UpstreamCollector(Collector):
    """``gateway_upstream_up`` and ``gateway_upstream_state``, read from the packs' status at scrape time."""

    def __init__(self, statuses: Callable[[], Iterable[tuple[str, UpstreamStatus]]]) -> None:
        self._statuses = statuses

    def collect(self) -> Iterable[GaugeMetricFamily]:
        up = GaugeMetricFamily(
            "gateway_upstream_up", "1 when the upstream server is connected", labels=["pack", "upstream"]
        )
        state = GaugeMetricFamily(
            "gateway_upstream_state", "1 for the upstream's current state", labels=["pack", "upstream", "state"]
        )
        for pack, status in self._statuses():
            up.add_metric([pack, status.name], 1.0 if status.state == "up" else 0.0)
            for name in STATES:
                state.add_metric([pack, status.name, name], 1.0 if status.state == name else 0.0)
        yield up
        yield state


class GatewayMetrics:
    """The metrics of one runtime."""

    def __init__(self, statuses: Callable[[], Iterable[tuple[str, UpstreamStatus]]] = tuple) -> None:
        self.registry = CollectorRegistry()
        self._calls = Counter("gateway_tool_calls", "Tool calls served", LABELS, registry=self.registry)
        self._errors = Counter(
            "gateway_tool_errors", "Tool calls that ended in an error", (*LABELS, "code"), registry=self.registry
        )
        self._latency = Histogram(
            "gateway_tool_call_duration_seconds",
            "Time from a call's arrival to its rendered result",
            LABELS,
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._unknown = Counter(
            "gateway_unknown_tool_calls",
            "Calls of a tool name no pack serves (no label: the name is the caller's)",
            registry=self.registry,
        )
        self.registry.register(_UpstreamCollector(statuses))
        self._codes: dict[tuple[str, ...], set[str]] = {}

    def for_tool(self, tool: str, pack: str, upstream: str | None) -> ToolMetrics:
        labels: Sequence[str] = (tool, pack, upstream or "")
        return ToolMetrics(
            self._calls.labels(*labels),
            self._latency.labels(*labels),
            lambda code: self._errors.labels(*labels, code),
            self._codes.setdefault(tuple(labels), set()),
        )

    def unknown_tool(self) -> None:
        """Count a call of a tool name no pack serves."""
        self._unknown.inc()

    def forget_tool(self, tool: str, pack: str, upstream: str | None) -> None:
        """Drop the series of a tool no longer served (a remote server that churns tool names must not grow the
        label set without end)."""
        labels = (tool, pack, upstream or "")
        for metric in (self._calls, self._latency):
            with contextlib.suppress(KeyError):
                metric.remove(*labels)
        for code in self._codes.pop(labels, ()):
            with contextlib.suppress(KeyError):
                self._errors.remove(*labels, code)

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format."""
        return generate_latest(self.registry)
