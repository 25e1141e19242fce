"""The body of an index job: every selected connector indexed in turn, file-shaped ones by a scan, hosted ones
(:class:`gateway.api.IncrementalConnector`) by a sync of their changes.

One connector's failure (a revoked token, a service down after its retries, a directory gone) is that connector's
status — ``error`` with ``last_error`` saying what happened and what to do — and the job goes on with the others; it
ends ``completed``, its ``error`` naming the connectors that failed. Progress: files-shaped connectors are scanned
first (their totals are known); a hosted one adds what each page brings.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import structlog

from gateway.api import IncrementalConnector, ScanResult, ToolError
from gateway_plugins.context.indexer import IndexOutcome
from gateway_plugins.context.jobs import JobHandle
from gateway_plugins.context.sync import sync_connector
from gateway_plugins.context.tenant_policy import TenantConnectorPolicy

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

log = structlog.get_logger(__name__)

__all__ = ["run_index_job"]


def _failure(exc: BaseException) -> str:
    """What a person reads in ``last_error``: a ToolError's own message, or the exception's type and text."""
    return exc.message if isinstance(exc, ToolError) else f"{type(exc).__name__}: {exc}"


async def run_index_job(
    service: ContextService,
    handle: JobHandle,
    connectors: list[dict[str, Any]],
    force: bool,
    policy: TenantConnectorPolicy | None = None,
) -> None:
    """Index ``connectors`` one after the other. ``policy``: what connectors added over the API may still name (a job
    an authenticated caller started); one it refuses now fails, naming the option, and is not read."""
    registry, indexer, repo, store = service.connectors, service.indexer, service.repo, service.store
    assert registry is not None and indexer is not None
    failed: list[str] = []
    work: list[tuple[dict[str, Any], Any, ScanResult | None]] = []
    for row in connectors:
        try:
            if policy is not None and row["origin"] != "config":
                policy.check(row["tenant"], row["config"])
            connector = await registry.instance(row)
            scan = None if isinstance(connector, IncrementalConnector) else await connector.scan()
            if scan is not None and not scan.documents and not force:
                await _refuse_to_empty(service, row, scan)
        except Exception as exc:
            await _record_failure(service, row, exc, failed)
            continue
        work.append((row, connector, scan))
        handle.total += len(scan.documents) if scan is not None else 0
    await handle.report(force=True)
    for row, connector, scan in work:
        if handle.stop_requested:
            break
        handle.current_connector = row["public_id"]  # the id its tenant knows
        base = handle.completed
        await repo.update_connector(store, row["id"], {"status": "indexing"})
        try:
            if scan is None:
                outcome = await _sync(service, handle, row, connector, force, base)
            else:
                outcome = await _scan_index(service, handle, row, connector, scan, force, base)
        except Exception as exc:
            await _record_failure(service, row, exc, failed)
            continue
        handle.outcomes[row["public_id"]] = outcome
        skipped = Counter(s.reason for s in [*scan.skipped, *outcome.skipped]) if scan is not None else Counter()
        if scan is not None and not scan.documents:  # an empty index must never be a mystery
            outcome.failed.insert(0, f"no document to index ({_why_empty(scan)})")
        await repo.update_connector(
            store,
            row["id"],
            {
                "status": "stopped" if outcome.stopped else "active",
                "last_sync": datetime.now(UTC) if not outcome.stopped else row["last_sync"],
                "documents": len(await repo.file_states(store, row["id"])),
                "skipped": dict(skipped),
                "last_error": "; ".join(outcome.failed[:5]) or None,
            },
        )
        log.info(
            "context.connector.indexed",
            connector=row["id"],
            indexed=outcome.indexed,
            unchanged=outcome.unchanged,
            removed=outcome.removed,
            skipped=dict(skipped),
        )
    if failed:
        handle.error = f"{len(failed)} of {len(connectors)} connector(s) failed: " + "; ".join(failed)
    await handle.report(force=True)


async def _scan_index(
    service: ContextService,
    handle: JobHandle,
    row: dict[str, Any],
    connector: Any,
    scan: ScanResult,
    force: bool,
    base: int,
) -> IndexOutcome:
    assert service.indexer is not None

    async def progress(done: int, path: str | None) -> None:
        handle.completed = base + done
        handle.documents = handle.completed
        await handle.report()

    outcome = await service.indexer.run(
        row["id"], connector, scan.documents, force=force, progress=progress, should_stop=lambda: handle.stop_requested
    )
    handle.completed = base + len(scan.documents) if not outcome.stopped else handle.completed
    return outcome


async def _sync(
    service: ContextService,
    handle: JobHandle,
    row: dict[str, Any],
    connector: IncrementalConnector,
    force: bool,
    base: int,
) -> IndexOutcome:
    assert service.indexer is not None
    start_total = handle.total

    async def progress(offered: int) -> None:
        handle.completed = base + offered
        handle.total = start_total + offered
        handle.documents = handle.completed
        await handle.report()

    return await sync_connector(
        service.store,
        service.repo,
        service.indexer,
        row,
        connector,
        force=force,
        progress=progress,
        should_stop=lambda: handle.stop_requested,
    )


def _why_empty(scan: ScanResult) -> str:
    """What a scan left out, by reason (``3 ignored, 1 hidden``), or that the source is empty."""
    skipped = Counter(s.reason for s in scan.skipped)
    return ", ".join(f"{n} {r}" for r, n in skipped.most_common()) or "the source is empty"


async def _refuse_to_empty(service: ContextService, row: dict[str, Any], scan: ScanResult) -> None:
    """A source that offered documents before and none now is more likely gone (a volume not mounted, a checkout
    half-done) than emptied on purpose: keep its index and say so. A forced re-index empties it."""
    indexed = len(await service.repo.file_states(service.store, row["id"]))
    if indexed:
        raise ToolError(
            f"the source offers no document now ({_why_empty(scan)}) where {indexed} were indexed; nothing was "
            "removed: if it really is empty, re-index with force or remove the connector",
            code="source_unavailable",
            retryable=True,
        )


async def _record_failure(service: ContextService, row: dict[str, Any], exc: BaseException, failed: list[str]) -> None:
    message = _failure(exc)
    if isinstance(exc, ToolError):
        log.warning("context.connector.failed", connector=row["id"], error=message)
    else:
        log.exception("context.connector.failed", connector=row["id"])
    failed.append(f"{row['public_id']}: {message}")
    await service.repo.update_connector(service.store, row["id"], {"status": "error", "last_error": message})
