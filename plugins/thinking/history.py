"""Thought histories, one per caller identity, bounded in count (LRU), size and idle time (TTL).

The reference server keeps one history for its single client. A gateway serves many clients, so each identity
(``ctx.principal.key``) gets its own: clients never see each other's thoughts, and an idle or excess history is
forgotten so memory stays bounded. All operations are synchronous (no ``await`` inside), hence atomic on the
event loop.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from gateway_plugins.thinking.config import HistoryLimits

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A mapping that forgets its least recently used entries beyond ``max_entries`` and entries idle longer than
    ``ttl_seconds``."""

    def __init__(self, max_entries: int, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._entries: OrderedDict[K, tuple[float, V]] = OrderedDict()
        self._max = max_entries
        self._ttl = ttl_seconds
        self._clock = clock

    def get_or_create(self, key: K, factory: Callable[[], V]) -> V:
        now = self._clock()
        self._expire(now)
        entry = self._entries.pop(key, None)
        value = factory() if entry is None else entry[1]
        self._entries[key] = (now, value)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
        return value

    def get(self, key: K) -> V | None:
        self._expire(self._clock())
        entry = self._entries.get(key)
        return None if entry is None else entry[1]

    def _expire(self, now: float) -> None:
        while self._entries:
            key, (touched, _) = next(iter(self._entries.items()))
            if now - touched < self._ttl:
                break
            del self._entries[key]

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries


@dataclass(frozen=True)
class ThoughtRecord:
    """What the history keeps of a thought. The text itself is not kept: nothing reads it back, and leaving it
    out bounds memory to a few hundred bytes per thought (``max_thoughts`` x ``max_histories`` of them)."""

    thought_number: int
    total_thoughts: int
    next_thought_needed: bool
    is_revision: bool | None = None
    revises_thought: int | None = None
    branch_from_thought: int | None = None
    branch_id: str | None = None
    needs_more_thoughts: bool | None = None


@dataclass
class History:
    """One identity's thoughts and branches, as the reference server keeps them (bounded)."""

    limits: HistoryLimits
    thoughts: deque[ThoughtRecord] = field(init=False)
    branches: dict[str, deque[ThoughtRecord]] = field(default_factory=dict)
    _used: dict[str, int] = field(default_factory=dict)
    _tick: int = 0

    def __post_init__(self) -> None:
        self.thoughts = deque(maxlen=self.limits.max_thoughts)

    def add(self, record: ThoughtRecord) -> None:
        """Append to the history; record on its branch only when both ``branchFromThought`` and ``branchId``
        are given (the reference server's rule). Beyond ``max_branches``, the least recently used branch goes."""
        self.thoughts.append(record)
        if record.branch_from_thought is None or not record.branch_id:
            return
        branch = self.branches.setdefault(record.branch_id, deque(maxlen=self.limits.max_thoughts))
        branch.append(record)
        self._tick += 1
        self._used[record.branch_id] = self._tick
        if len(self.branches) > self.limits.max_branches:
            oldest = min(self._used, key=self._used.__getitem__)
            del self.branches[oldest], self._used[oldest]

    def branch_ids(self) -> list[str]:
        """Branch ids in first-seen order (the reference lists ``Object.keys(branches)``)."""
        return list(self.branches)


class Histories:
    """Every identity's :class:`History`."""

    def __init__(self, limits: HistoryLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self._limits = limits
        self._cache: BoundedCache[str, History] = BoundedCache(limits.max_histories, limits.ttl_seconds, clock)

    def record(self, identity: str, record: ThoughtRecord) -> History:
        history = self._cache.get_or_create(identity, lambda: History(self._limits))
        history.add(record)
        return history

    def __len__(self) -> int:
        return len(self._cache)

    def __contains__(self, identity: object) -> bool:
        return identity in self._cache
