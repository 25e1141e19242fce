"""The context engine's service layer: the one place the operations live.

The MCP tools (:mod:`.tools`) call it today; the REST routes of part 2 will call the same methods. Every method
takes the caller's ``tenant`` (``Principal.tenant``, ``"default"`` when unauthenticated): connectors, jobs and
search results never cross tenants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import structlog

from gateway.api import (
    STORE,
    VECTOR_STORE,
    ConfigError,
    NotFound,
    PackContext,
    RelationalStore,
    ToolError,
    ValidationFailed,
)
from gateway_plugins.context.config import ContextConfig
from gateway_plugins.context.connectors import ConnectorRegistry
from gateway_plugins.context.index_job import run_index_job
from gateway_plugins.context.indexer import Indexer
from gateway_plugins.context.jobs import JobHandle, JobRunner
from gateway_plugins.context.live_index import LiveIndex
from gateway_plugins.context.migrations import MIGRATIONS, NAMESPACE
from gateway_plugins.context.models import (
    ConnectorInfo,
    ConnectorOutput,
    ConnectorStats,
    IndexControlInput,
    IndexControlOutput,
    JobInfo,
    JobProgress,
)
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.retrieval.ranker import Ranker
from gateway_plugins.context.vectors import ChunkVectors

log = structlog.get_logger(__name__)

__all__ = ["DEFAULT_TENANT", "ContextService"]

DEFAULT_TENANT = "default"
_SECRET_WORDS = ("token", "secret", "password", "key", "credential")


def _public_config(config: dict[str, Any]) -> dict[str, Any]:
    return {k: ("***" if any(w in k.lower() for w in _SECRET_WORDS) else v) for k, v in config.items()}


def _job_info(row: dict[str, Any] | None) -> JobInfo | None:
    if row is None:
        return None
    finished = row["finished_at"]
    return JobInfo(
        id=row["id"],
        kind=row["kind"],
        status=row["status"],
        connectors=list(row["connectors"] or []),
        started_at=row["started_at"],
        finished_at=finished,
        progress=JobProgress(
            completed=row["completed"], total=row["total"], current_connector=row["current_connector"]
        ),
        documents_processed=row["documents_processed"],
        duration_seconds=(finished - row["started_at"]).total_seconds() if finished else None,
        error=row["error"],
    )


class ContextService:
    def __init__(self, config: ContextConfig, context: PackContext) -> None:
        self.config = config
        self.context = context
        self.repo = Repository()
        self._store: RelationalStore | None = None
        self.live: LiveIndex | None = None
        self.ranker: Ranker | None = None
        self.connectors: ConnectorRegistry | None = None
        self.jobs: JobRunner | None = None
        self.indexer: Indexer | None = None
        self.vectors: ChunkVectors | None = None

    @property
    def store(self) -> RelationalStore:
        if self._store is None:
            raise RuntimeError("the context pack is not started")
        return self._store

    # -- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        store: RelationalStore = self.context.provider(STORE)
        await store.migrate(NAMESPACE, MIGRATIONS)
        self._store = store
        self.vectors = ChunkVectors(self.context.provider(VECTOR_STORE))
        self.live = LiveIndex(store, self.repo, refresh_seconds=self.config.refresh_seconds)
        await self.live.catch_up()
        self.ranker = Ranker(self.live.index, self.config.ranking_options())
        self.connectors = ConnectorRegistry(self.context, store, self.repo)
        self.jobs = JobRunner(store, self.repo, heartbeat_seconds=self.config.heartbeat_seconds)
        self.indexer = Indexer(
            store,
            self.repo,
            self.vectors,
            self.context.embeddings if self.config.embed else None,
            on_written=self.live.written,
            on_removed=self.live.removed,
            embed_batch=self.config.embed_batch,
            max_embed_chars=self.config.max_embed_chars,
            embed_all=self.config.embed_all,
        )
        await self._declare_configured()
        log.info("context.started", chunks=len(self.live.index), files=len(self.live.index.live_files()))

    async def _declare_configured(self) -> None:
        """Connectors declared in ``[plugins.context]`` exist in the store (added once, updated when changed)."""
        assert self.connectors is not None
        for number, declared in enumerate(self.config.connectors):
            raw = declared.model_dump()
            tenant = raw.pop("tenant")
            existing = await self.repo.connector_by_name(self.store, tenant, declared.name)
            try:
                if existing is None:
                    await self.connectors.add(tenant, raw, origin="config")
                else:
                    await self.connectors.update(tenant, existing["id"], raw)
            except ToolError as exc:
                raise ConfigError(
                    f"'plugins.context.connectors[{number}]' ({declared.name!r}): {exc.message}"
                ) from None

    async def stop(self) -> None:
        if self.jobs is not None:
            await self.jobs.aclose()
        if self.connectors is not None:
            await self.connectors.aclose()

    # -- connectors --------------------------------------------------------------------------------------------

    async def connector_info(self, row: dict[str, Any]) -> ConnectorInfo:
        skipped = row.get("skipped") or {}
        return ConnectorInfo(
            id=row["id"],
            type=row["type"],
            name=row["name"],
            status=row["status"],
            origin=row["origin"],
            created_at=row["created_at"],
            last_sync=row["last_sync"],
            config=_public_config(row["config"]),
            stats=ConnectorStats(
                documents_indexed=row["documents"],
                chunks=await self.repo.count_chunks(self.store, row["id"]),
                skipped=dict(skipped),
                last_error=row["last_error"],
            ),
        )

    async def manage_connectors(
        self, tenant: str, action: str, connector_id: str | None, config: dict[str, Any] | None
    ) -> ConnectorOutput:
        registry = self.connectors
        assert registry is not None and self.vectors is not None and self.live is not None
        if action == "list":
            rows = await self.repo.list_connectors(self.store, tenant)
            infos = [await self.connector_info(r) for r in rows]
            return ConnectorOutput(action=action, message=f"{len(infos)} connector(s)", connectors=infos)
        if action == "add":
            if not config:
                raise _field_error("connector_config", "required for add")
            row = await registry.add(tenant, config)
            return ConnectorOutput(
                action=action,
                message=f"connector {row['id']!r} added; run context.index_control start to index it",
                connectors=[await self.connector_info(row)],
            )
        if not connector_id:
            raise _field_error("connector_id", f"required for {action}")
        if action == "update":
            if not config:
                raise _field_error("connector_config", "required for update")
            row, changed = await registry.update(tenant, connector_id, config)
            note = "; its content changed: run context.index_control start to re-index" if changed else ""
            return ConnectorOutput(
                action=action,
                message=f"connector {connector_id!r} updated{note}",
                connectors=[await self.connector_info(row)],
            )
        active = await self.jobs.active(tenant) if self.jobs else None
        if active is not None and connector_id in (active["connectors"] or []):
            await self.jobs.stop(active["id"])  # type: ignore[union-attr]
            await self.jobs.wait(active["id"])  # type: ignore[union-attr]
        removed = await registry.remove(tenant, connector_id)
        await self.vectors.delete_everywhere(removed)
        await self.live.catch_up()
        return ConnectorOutput(
            action=action, message=f"connector {connector_id!r} removed with its {len(removed)} indexed chunk(s)"
        )

    # -- index control -----------------------------------------------------------------------------------------

    async def _selected(self, tenant: str, ids: Sequence[str] | None) -> list[dict[str, Any]]:
        rows = await self.repo.list_connectors(self.store, tenant)
        if not ids:
            return rows
        by_id = {r["id"]: r for r in rows}
        unknown = [i for i in ids if i not in by_id and i != "all"]
        if unknown:
            raise NotFound(
                f"unknown connector id(s): {', '.join(unknown)}",
                details={"field": "connectors", "unknown": unknown, "known": sorted(by_id)},
            )
        return rows if "all" in ids else [by_id[i] for i in ids]

    async def index_control(self, tenant: str, args: IndexControlInput) -> IndexControlOutput:
        jobs = self.jobs
        assert jobs is not None
        if args.action == "status":
            active = await jobs.active(tenant)
            latest = active or await jobs.latest(tenant)
            status = active["status"] if active else ("idle" if latest is None else latest["status"])
            return IndexControlOutput(
                action="status",
                status=status,
                message="indexing" if active else "no job running",
                current_job=_job_info(latest),
                last_completed=_job_info(await jobs.last_finished(tenant)),
            )
        if args.action == "stop":
            active = await jobs.active(tenant)
            if active is None:
                raise ToolError(
                    "no indexing job is running",
                    code="not_found",
                    http_status=404,
                    details={"field": "action", "reason": "no_job"},
                )
            await jobs.stop(active["id"])
            return IndexControlOutput(
                action="stop",
                status="stopping",
                message="indexing will stop gracefully after the current file",
                current_job=_job_info(await self.repo.get_job(self.store, active["id"])),
            )
        selected = await self._selected(tenant, args.connectors)
        if not selected:
            raise _field_error("connectors", "no connector to index: add one with context.connector_management")
        active = await jobs.active(tenant)
        if active is not None:
            return IndexControlOutput(
                action=args.action,
                status=active["status"],
                message="a job is already running",
                current_job=_job_info(active),
            )
        force = args.action == "force_reindex"
        ids = [r["id"] for r in selected]
        row = await jobs.start(
            tenant, "reindex" if force else "index", ids, lambda handle: self._index_job(handle, selected, force)
        )
        return IndexControlOutput(
            action=args.action,
            status="running",
            message=f"indexing {len(ids)} connector(s) in the background; poll with action 'status'",
            current_job=_job_info(row),
            warning="every file is re-chunked and re-embedded; searches keep the old version until each file is "
            "replaced"
            if force
            else None,
        )

    async def _index_job(self, handle: JobHandle, connectors: list[dict[str, Any]], force: bool) -> None:
        await run_index_job(self, handle, connectors, force)


def _field_error(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(f"{field}: {message}", details={"errors": [{"field": field, "message": message}]})
