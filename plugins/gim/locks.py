"""The lock that serialises duplicate decisions: one asyncio lock per pack, plus a lease row across processes.

Deciding "is this a duplicate of an existing master?" and writing the answer must be atomic, or two concurrent
submissions of the same new issue would both find nothing and create two masters. Within a process an
:class:`asyncio.Lock` serialises submissions; across processes (several gateways on one PostgreSQL, or a CLI
next to a server) a lease in ``gim_locks`` does: a conditional ``UPDATE`` takes it only when it is free or its
lease expired, which both SQLite and PostgreSQL execute atomically. The lease (not a transaction held open)
keeps the vector-store writes outside any database transaction, and survives nothing: a holder killed with
``kill -9`` leaves a lease that expires, or that the next holder on the same host takes over at once after
checking that the holder's process is gone. A holder that took over an abandoned lease is told so
(:attr:`LockGrant.took_over`), and reconciles the dead holder's half-written submission before going on.
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

import anyio
import structlog

from gateway.api import RelationalStore, ServiceUnavailable
from gateway_plugins.gim.repository import Repository

log = structlog.get_logger(__name__)

__all__ = ["DedupLock", "LockGrant"]

_NAME = "dedup"


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
        repo: Repository,
        *,
        lease_seconds: float,
        timeout_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._repo = repo
        self._lease = lease_seconds
        self._timeout = timeout_seconds
        self._clock = clock
        self._local = asyncio.Lock()
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[LockGrant]:
        async with self._local:
            grant = await self._acquire()
            try:
                yield grant
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await self._repo.unlock(self._store, _NAME, self.owner)
                    except Exception:  # the lease expires on its own
                        log.warning("gim.lock.release_failed", exc_info=True)

    async def renew(self) -> None:
        """Extend the lease (long operations under the lock call this now and then)."""
        await self._repo.try_lock(self._store, _NAME, self.owner, self._clock(), self._lease)

    async def _acquire(self) -> LockGrant:
        deadline = time.monotonic() + self._timeout
        delay = 0.002
        if await self._repo.try_lock_free(self._store, _NAME, self.owner, self._clock(), self._lease):
            return LockGrant(took_over=False)
        while True:
            now = self._clock()
            previous = await self._repo.try_lock(self._store, _NAME, self.owner, now, self._lease)
            if previous is not None:
                holder = previous.get("owner")
                took_over = bool(holder) and holder != self.owner
                if took_over:
                    log.warning("gim.lock.expired_lease_taken_over", previous=holder)
                return LockGrant(took_over=took_over)
            row = await self._store.fetch_one("SELECT owner FROM gim_locks WHERE name = :name", {"name": _NAME})
            holder = row["owner"] if row else None
            if holder and _process_gone(holder):
                if await self._repo.steal_lock(self._store, _NAME, self.owner, holder, now, self._lease):
                    log.warning("gim.lock.dead_holder_taken_over", previous=holder)
                    return LockGrant(took_over=True)
            if time.monotonic() >= deadline:
                raise ServiceUnavailable(
                    "Another gateway instance is busy deciding duplicates; retry shortly.",
                    details={"retry_after": 1},
                )
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.05)
