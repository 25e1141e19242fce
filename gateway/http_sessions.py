"""Who opened each MCP session of the handshake era over HTTP, and how many sessions each caller holds (so one
authenticated caller cannot fill the server's session table and lock every other such client out)."""

from __future__ import annotations

import time
from collections import OrderedDict

__all__ = ["SessionOwners"]


class SessionOwners:
    """Which principal opened each MCP session (a bounded map: the least recently used entries go first), and which
    sessions count against each principal's quota: those used within ``idle_seconds`` plus those being opened now.
    A session that looks idle here keeps its owner (the SDK may still hold it open: a long call, an event stream);
    it only stops counting, and counts again once used."""

    def __init__(self, capacity: int = 20_000, *, idle_seconds: float = 300.0) -> None:
        self.capacity = capacity
        self.idle_seconds = idle_seconds
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._used: dict[str, float] = {}
        self._recent: dict[str, set[str]] = {}
        self._opening: dict[str, int] = {}

    def bind(self, session_id: str, owner: str, *, reserved: bool = False) -> None:
        """``owner`` opened ``session_id``; ``reserved``: it is the session :meth:`reserve` counted, whose
        reservation ends now (the bound session counts instead: not both while its answer is being sent)."""
        if reserved:
            self.release(owner)
        self.forget(session_id)
        self._owners[session_id] = owner
        self._touch(session_id, owner)
        while len(self._owners) > self.capacity:
            self.forget(next(iter(self._owners)))

    def owner(self, session_id: str) -> str | None:
        owner = self._owners.get(session_id)
        if owner is not None:
            self._owners.move_to_end(session_id)
            self._touch(session_id, owner)
        return owner

    def forget(self, session_id: str) -> None:
        owner = self._owners.pop(session_id, None)
        self._used.pop(session_id, None)
        if owner is not None:
            self._uncount(owner, session_id)

    def reserve(self, owner: str, quota: int) -> int | None:
        """Count one more session being opened by ``owner``, unless it holds ``quota`` already (then how many)."""
        horizon = time.monotonic() - self.idle_seconds
        for session_id in [s for s in self._recent.get(owner, ()) if self._used.get(s, 0.0) < horizon]:
            self._uncount(owner, session_id)
        held = len(self._recent.get(owner, ())) + self._opening.get(owner, 0)
        if held >= quota:
            return held
        self._opening[owner] = self._opening.get(owner, 0) + 1
        return None

    def release(self, owner: str) -> None:
        """The session :meth:`reserve` counted is open (bound) or was not opened."""
        left = self._opening.get(owner, 0) - 1
        if left > 0:
            self._opening[owner] = left
        else:
            self._opening.pop(owner, None)

    def _touch(self, session_id: str, owner: str) -> None:
        self._used[session_id] = time.monotonic()
        self._recent.setdefault(owner, set()).add(session_id)

    def _uncount(self, owner: str, session_id: str) -> None:
        held = self._recent.get(owner)
        if held is not None:
            held.discard(session_id)
            if not held:
                del self._recent[owner]
