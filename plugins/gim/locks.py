r"""The lock that serialises duplicate decisions: one asyncio lock per pack, plus a lease row across processes.

Deciding "is this a duplicate of an existing master?" and writing the answer must be atomic, or two concurrent
submissions of the same new issue would both find nothing and create two masters. Within a process an
:class:`asyncio.Lock` serialises submissions; across processes (several gateways on one PostgreSQL, or a CLI
next to a server) a lease in ``gim_locks`` does: a conditional ``UPDATE`` takes it only when it is free or its
lease expired, which both SQLite and PostgreSQL execute atomically. The lease (not a transaction held open)
keeps the vector-store writes outside any database transaction, and survives nothing: a holder killed with
``kill -9`` leaves a lease that expires, or that the next holder on the same host takes over at once after
checking that the holder's process is gone. A holder that took over an abandoned lease is told so
(:attr:`LockGrant.took_over`), and reconciles the dead holder's half-written submission before going on.

A holder may also outlive its lease (a process paused, or a step slower than the lease): the lease is then
another's, who deletes the holder's pending rows. So the holder's commit point, the transaction that activates a
submission, first :meth:`DedupLock.fence`\ s: it extends the lease only if it still holds it, inside that same
transaction, or fails it (:class:`LeaseLost`, a retryable refusal) so that nothing is acknowledged that the new
holder may have deleted or decided differently.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import structlog

from gateway.api import RelationalStore, ServiceUnavailable

if TYPE_CHECKING:
    from gateway.api.stores import Row

log = structlog.get_logger(__name__)

__all__ = ["DedupLock", "LeaseLost", "LockGrant"]

_NAME = "dedup"


def _busy() -> ServiceUnavailable:
    return ServiceUnavailable(
        "Another submission or gateway instance is busy deciding duplicates; retry shortly.",
        details={"retry_after": 1},
    )


class LeaseLost(ServiceUnavailable):
    """This process's lease on the lock ran out and another holder took it: what it was doing is not committed."""

    def __init__(self) -> None:
        super().__init__(
            "Deciding duplicates took longer than the lock's lease and another gateway instance took over; "
            "nothing was stored: retry.",
            details={"retry_after": 1},
        )


@dataclass
class LockGrant:
    took_over: bool
    """The previous holder died or let its lease expire while holding it."""


def _process_gone(owner: str) -> bool:
    """True when ``owner`` (``host:pid:nonce``) names a process of this host that no longer exists."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


class DedupLock:
    """``async with lock.hold() as grant:`` — exclusive across tasks of this pack and across processes."""

    def __init__(
        self,
        store: RelationalStore,
        *,
        lease_seconds: float,
        timeout_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._lease = lease_seconds
        self._timeout = timeout_seconds
        self._clock = clock
        self._local = asyncio.Lock()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[LockGrant]:
        """Hold the lock; waiting for it (in this process, then across processes) takes at most the timeout, then
        fails with a retryable refusal, so a store outage cannot queue submissions without end."""
        deadline = time.monotonic() + self._timeout
        try:
            async with asyncio.timeout(self._timeout):
                await self._local.acquire()
        except TimeoutError:
            raise _busy() from None
        try:
            grant = await self._acquire(deadline)
            try:
                yield grant
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await self._store.execute(
                            "UPDATE gim_locks SET owner = NULL, expires_at = 0 WHERE name = :name AND owner = :owner",
                            {"name": _NAME, "owner": self.owner},
                        )
                    except Exception:  # the lease expires on its own
                        log.warning("gim.lock.release_failed", exc_info=True)
        finally:
            self._local.release()

    async def renew(self) -> None:
        """Extend the lease (long operations under the lock call this now and then); raises :class:`LeaseLost`
        when another holder has taken it."""
        await self.fence(self._store)

    async def fence(self, db: Any) -> None:
        """Extend the lease if this process still holds it, else raise :class:`LeaseLost`. Called first in a
        transaction ``db``, it keeps the lease this process's until that transaction ends (the row stays locked)."""
        held = await db.execute(
            "UPDATE gim_locks SET expires_at = :expires WHERE name = :name AND owner = :owner",
            {"expires": self._clock() + self._lease, "name": _NAME, "owner": self.owner},
        )
        if not held:
            log.warning("gim.lock.lease_lost", owner=self.owner)
            raise LeaseLost()

    async def _acquire(self, deadline: float) -> LockGrant:
        delay = 0.002
        if await self._take_free():
            return LockGrant(took_over=False)
        while True:
            now = self._clock()
            previous = await self._take_expired(now)
            if previous is not None:
                holder = previous.get("owner")
                took_over = bool(holder) and holder != self.owner
                if took_over:
                    log.warning("gim.lock.expired_lease_taken_over", previous=holder)
                return LockGrant(took_over=took_over)
            row = await self._store.fetch_one("SELECT owner FROM gim_locks WHERE name = :name", {"name": _NAME})
            holder = row["owner"] if row else None
            if holder and _process_gone(holder):
                if await self._take_from(holder, now):
                    log.warning("gim.lock.dead_holder_taken_over", previous=holder)
                    return LockGrant(took_over=True)
            if time.monotonic() >= deadline:
                raise _busy()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)

    async def _take_free(self) -> bool:
        """The fast path: take the lock if nobody holds it (one statement)."""
        taken = await self._store.execute(
            "UPDATE gim_locks SET owner = :owner, expires_at = :expires WHERE name = :name AND owner IS NULL",
            {"owner": self.owner, "expires": self._clock() + self._lease, "name": _NAME},
        )
        return taken > 0

    async def _take_expired(self, now: float) -> Row | None:
        """Take the lock if free or expired; the previous holder's row when taken, else None."""
        async with self._store.transaction() as tx:
            previous = await tx.fetch_one("SELECT owner, expires_at FROM gim_locks WHERE name = :name", {"name": _NAME})
            taken = await tx.execute(
                "UPDATE gim_locks SET owner = :owner, expires_at = :expires WHERE name = :name "
                "AND (owner IS NULL OR expires_at < :now OR owner = :owner)",
                {"owner": self.owner, "expires": now + self._lease, "name": _NAME, "now": now},
            )
            return (previous or {"owner": None, "expires_at": 0.0}) if taken else None

    async def _take_from(self, holder: str, now: float) -> bool:
        """Take the lock from ``holder`` (a process of this host that is gone)."""
        taken = await self._store.execute(
            "UPDATE gim_locks SET owner = :owner, expires_at = :expires WHERE name = :name AND owner = :previous",
            {"owner": self.owner, "expires": now + self._lease, "name": _NAME, "previous": holder},
        )
        return taken > 0
