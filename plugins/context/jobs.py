"""Index jobs: run in the background, report progress, stop gracefully, and resume after a crash.

A job is a row in ``ctx_jobs`` (so ``status`` works from any process) and, in the process that runs it, an asyncio
task. The task records its progress and a heartbeat every ``heartbeat_seconds``; a job whose heartbeat stopped
(its process was killed) is marked ``interrupted`` by the next ``status`` or ``start``, and that ``start`` simply
runs again: files finished before the crash are unchanged and skipped, so nothing indexed is redone or lost.
``stop`` sets a flag the task checks between files (in memory, and in the row for a job another process runs).
A job whose connectors partly failed still ends ``completed``; its ``error`` names the failed ones.
"""

from __future__ import annotations

import asyncio
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import structlog

from gateway.api import RelationalStore
from gateway_plugins.context.repository import Repository

if TYPE_CHECKING:
    from gateway_plugins.context.indexer import IndexOutcome

log = structlog.get_logger(__name__)

__all__ = ["ACTIVE", "JobHandle", "JobRunner"]

ACTIVE = ("queued", "running", "stopping")


@dataclass
class JobHandle:
    """What the running task reports through: progress, and whether it was asked to stop."""

    id: str
    runner: JobRunner
    total: int = 0
    completed: int = 0
    documents: int = 0
    current_connector: str | None = None
    stop_requested: bool = False
    error: str | None = None
    """Set by a job that completes with some connectors failed (each one's own error is on its row)."""
    stop_reason: str | None = None
    """Why the job was stopped when nobody asked it to (its process is exiting), recorded with its status."""
    outcomes: dict[str, IndexOutcome] = field(default_factory=dict)
    """What the job did to each connector it indexed (by the id its tenant knows), in the process that ran it."""
    _saved_at: float = 0.0

    async def report(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._saved_at < self.runner.heartbeat_seconds:
            return
        self._saved_at = now
        await self.runner.repo.update_job(
            self.runner.store,
            self.id,
            {
                "completed": self.completed,
                "total": self.total,
                "current_connector": self.current_connector,
                "documents_processed": self.documents,
                "heartbeat_at": datetime.now(UTC),
            },
        )
        row = await self.runner.repo.get_job(self.runner.store, self.id)
        if row is not None and row["stop_requested"]:
            self.stop_requested = True


JobBody = Callable[[JobHandle], Awaitable[None]]


class JobRunner:
    def __init__(self, store: RelationalStore, repo: Repository, *, heartbeat_seconds: float = 1.0) -> None:
        self.store = store
        self.repo = repo
        self.heartbeat_seconds = heartbeat_seconds
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"
        self._tasks: dict[str, tuple[asyncio.Task[None], JobHandle]] = {}

    def _dead(self, owner: str) -> bool:
        """Whether the process that owns a job is gone (known only for this host's processes)."""
        host, _, rest = owner.partition(":")
        pid_text, _, run = rest.partition(":")
        if host != socket.gethostname() or not pid_text.isdigit():
            return False
        pid = int(pid_text)
        if pid == os.getpid():  # this runner's own job without a task is dead; another runner's here is unknown
            return run == self.owner.rsplit(":", 1)[-1]
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    async def expire_stale(self, tenant: str) -> None:
        """Mark jobs whose process died as interrupted: at once for a process of this host that no longer runs,
        after a silent heartbeat for one elsewhere."""
        before = datetime.now(UTC) - timedelta(seconds=max(10.0, 10 * self.heartbeat_seconds))
        for row in await self.repo.jobs_of(self.store, tenant, ACTIVE, limit=10):
            if row["id"] in self._tasks:
                continue  # alive here, even if a blocking call held its heartbeat back
            if self._dead(row["owner"]) or row["heartbeat_at"] < before:
                await self.repo.update_job(self.store, row["id"], {"status": "interrupted"})
                # one job runs per tenant at a time: a connector it left "indexing" is indexed by no one
                await self.repo.release_indexing_connectors(
                    self.store, tenant, f"indexing job {row['id']} was interrupted (its process ended)"
                )

    async def active(self, tenant: str) -> dict[str, Any] | None:
        await self.expire_stale(tenant)
        rows = await self.repo.jobs_of(self.store, tenant, ACTIVE)
        return rows[0] if rows else None

    async def last_finished(self, tenant: str) -> dict[str, Any] | None:
        rows = await self.repo.jobs_of(self.store, tenant, ("completed",))
        return rows[0] if rows else None

    async def latest(self, tenant: str) -> dict[str, Any] | None:
        rows = await self.repo.jobs_of(self.store, tenant, (*ACTIVE, "completed", "stopped", "failed", "interrupted"))
        return rows[0] if rows else None

    async def start(self, tenant: str, kind: str, connectors: Sequence[str], body: JobBody) -> dict[str, Any]:
        now = datetime.now(UTC)
        job_id = f"index-{uuid.uuid4()}" if kind == "index" else f"reindex-{uuid.uuid4()}"
        row = {
            "id": job_id,
            "tenant": tenant,
            "kind": kind,
            "status": "running",
            "connectors": list(connectors),
            "completed": 0,
            "total": 0,
            "current_connector": None,
            "documents_processed": 0,
            "started_at": now,
            "finished_at": None,
            "heartbeat_at": now,
            "owner": self.owner,
            "stop_requested": False,
            "error": None,
        }
        await self.repo.insert_job(self.store, row)
        handle = JobHandle(job_id, self)
        task = asyncio.create_task(self._run(handle, body), name=job_id)
        self._tasks[job_id] = (task, handle)
        return row

    async def _heartbeat(self, job_id: str) -> None:
        """Beat while the job's task lives, whatever it is waiting for (a model load, a slow embedder)."""
        while True:
            await asyncio.sleep(self.heartbeat_seconds)
            try:
                await self.repo.update_job(self.store, job_id, {"heartbeat_at": datetime.now(UTC)})
            except Exception:
                log.warning("context.job.heartbeat_failed", job=job_id)

    async def _run(self, handle: JobHandle, body: JobBody) -> None:
        status, error = "completed", None
        beat = asyncio.create_task(self._heartbeat(handle.id))
        try:
            await body(handle)
            if handle.stop_requested:
                status = "stopped"
        except asyncio.CancelledError:
            status = "interrupted"
            raise
        except Exception as exc:
            log.exception("context.job.failed", job=handle.id)
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            beat.cancel()
            try:
                await asyncio.shield(self._finish(handle, status, error))
            except Exception:
                log.exception("context.job.finish_failed", job=handle.id)
            finally:  # only now: until its final status is stored, the job must not look orphaned
                self._tasks.pop(handle.id, None)

    async def _finish(self, handle: JobHandle, status: str, error: str | None) -> None:
        await handle.report(force=True)
        reasons = [r for r in (error or handle.error, handle.stop_reason if status != "completed" else None) if r]
        await self.repo.update_job(
            self.store,
            handle.id,
            {"status": status, "finished_at": datetime.now(UTC), "error": "; ".join(reasons) or None},
        )

    async def stop(self, job_id: str) -> None:
        await self.repo.update_job(self.store, job_id, {"stop_requested": True, "status": "stopping"})
        local = self._tasks.get(job_id)
        if local is not None:
            local[1].stop_requested = True

    def running_here(self, job_id: str) -> JobHandle | None:
        local = self._tasks.get(job_id)
        return local[1] if local else None

    async def wait(self, job_id: str) -> None:
        local = self._tasks.get(job_id)
        if local is not None:
            await asyncio.shield(local[0])

    async def aclose(self, *, grace_seconds: float = 10.0) -> None:
        """Stop every local job gracefully (they finish their current file); cancel what does not stop in time.
        Each such job records why it stopped: a one-shot process (``gateway call``) that started one exits at once."""
        for task, handle in list(self._tasks.values()):
            handle.stop_requested = True
            handle.stop_reason = (
                "stopped: the process running it exited before it finished; start it from a gateway that keeps "
                "running (gateway serve), or run gateway context index PATH, which waits for it; the next start "
                "resumes where it stopped"
            )
            try:
                await asyncio.wait_for(asyncio.shield(task), grace_seconds)
            except (TimeoutError, asyncio.CancelledError):
                task.cancel()
            except Exception:
                log.exception("context.job.stop_failed", job=handle.id)
