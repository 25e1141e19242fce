"""One process per embedded store directory: an exclusive OS file lock taken when the store is created.

Qdrant Edge locks each shard's write-ahead log, but only when the shard is opened, and a store opens its shards
lazily and creates new ones on demand: without a lock of its own, a second gateway on the same data dir would
start fine and fail later, at its first search, with ``Can't init WAL: Kind(WouldBlock)``, or race the first one
creating a collection. The lock turns that into a clear failure at start-up. The operating system releases it when
the process ends, however it ends.
"""

from __future__ import annotations

from pathlib import Path

import portalocker
import structlog

from gateway.api import ProviderUnavailable

log = structlog.get_logger(__name__)

LOCK_FILE = "store.pid"


class DirectoryInUse(ProviderUnavailable):
    """Another process holds the directory (its pid in :attr:`pid`, ``None`` when its pid file cannot be read)."""

    def __init__(self, provider: str, reason: str, pid: int | None) -> None:
        super().__init__(provider, reason)
        self.pid = pid


class DirectoryLock:
    """An exclusive, non-blocking lock on ``directory`` that records the holder's pid."""

    def __init__(self, directory: Path, provider: str) -> None:
        self.directory = directory
        self.provider = provider
        self._lock = portalocker.PidFileLock(str(directory / LOCK_FILE), fail_when_locked=True)
        self._held = False

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ProviderUnavailable` naming the process that holds it."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except portalocker.AlreadyLocked:
            pid = self.holder()
            raise DirectoryInUse(self.provider, self._in_use_message(pid), pid) from None
        except portalocker.LockException as exc:  # no locking on this file system (some network mounts)
            raise ProviderUnavailable(
                self.provider, f"cannot lock the vector store at {self.directory} ({exc}); use a local disk"
            ) from exc
        self._held = True
        log.debug("vector store directory locked", path=str(self.directory))

    def release(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()

    @property
    def held(self) -> bool:
        return self._held

    def holder(self) -> int | None:
        """The pid of the process holding the lock, as its pid file says."""
        return self._lock.read_pid()

    def _in_use_message(self, pid: int | None) -> str:
        holder = f"pid {pid}" if pid is not None else "pid unknown"
        return (
            f"the vector store at {self.directory} is in use by another gateway process ({holder}); point this "
            "gateway at another data_dir (MCP_GATEWAY_DATA_DIR / [gateway] data_dir) or use the `qdrant` server "
            'store for shared access ([providers] vector_store = "qdrant")'
        )
