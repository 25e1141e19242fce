"""The context engine's service layer: the one place the operations live.

The MCP tools (:mod:`.tools`) and the REST routes (:mod:`.rest`) call the same methods, and the read operations
of :mod:`.search`, :mod:`.pages`, :mod:`.suggestions`, :mod:`.related`, :mod:`.resources` and :mod:`.overview`,
which take the service. Every method takes the caller's ``tenant`` (``Principal.tenant``, ``"default"`` when
unauthenticated): connectors, jobs, settings and search results never cross tenants, and a connector is addressed
by the id its tenant sees (``public_id``; see :mod:`.connectors`).
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import structlog

from gateway.api import (
    STORE,
    VECTOR_STORE,
    ConfigError,
    Forbidden,
    NotFound,
    PackContext,
    RelationalStore,
    ToolError,
    ValidationFailed,
    embeddings_off_loop,
)
from gateway_plugins.context.config import ContextConfig
from gateway_plugins.context.connectors import ConnectorRegistry
from gateway_plugins.context.index_job import run_index_job
from gateway_plugins.context.indexer import Indexer
from gateway_plugins.context.jobs import JobHandle, JobRunner
from gateway_plugins.context.live_index import LiveIndex
from gateway_plugins.context.migrations import MIGRATIONS, NAMESPACE
from gateway_plugins.context.models import ConnectorInfo, ConnectorStats, IndexControlOutput, JobInfo, JobProgress
from gateway_plugins.context.pages import CursorCodec
from gateway_plugins.context.repository import Repository
from gateway_plugins.context.retrieval.ranker import Ranker
from gateway_plugins.context.stats import SearchStats
from gateway_plugins.context.tenant_policy import TenantConnectorPolicy
from gateway_plugins.context.vectors import ChunkVectors

log = structlog.get_logger(__name__)

__all__ = ["DEFAULT_TENANT", "ConnectorChange", "ContextService", "field_error"]

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


@dataclass(frozen=True)
class ConnectorChange:
    """What an update did: the connector after it, whether what it indexes changed, and the re-index job started
    for the change (``None`` when nothing changed, or another job of the tenant was running: ``note`` says)."""

    connector: ConnectorInfo
    changed: bool
    job: JobInfo | None
    note: str


def _conflict(message: str, details: dict[str, Any]) -> ToolError:
    return ToolError(message, code="conflict", http_status=409, details=details)


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
        self.plain_ranker: Ranker | None = None
        """Ranks by the fused lexical and dense scores alone (a tenant's ``search.enable_reranking = false``)."""
        self.search_stats = SearchStats()
        self.suggestion_cache: OrderedDict[Any, Any] = OrderedDict()
        self._cursors: CursorCodec | None = None
        self._starting = asyncio.Lock()
        self._incomplete: tuple[set[str], float] | None = None

    @property
    def store(self) -> RelationalStore:
        if self._store is None:
            raise RuntimeError("the context pack is not started")
        return self._store

    async def incomplete_embedders(self) -> set[str]:
        """The embedders (the fallback aside) some embedded files have no vectors of (an outage during an index
        run): a search passes them over until the next run fills them in. Counted at most every 5 seconds."""
        ids = [e.id for e in self.context.embeddings().embedders[:-1]]
        if ids and (self._incomplete is None or time.monotonic() - self._incomplete[1] > 5.0):
            sets = await self.repo.embedded_sets(self.store)
            self._incomplete = ({i for i in ids if any(i not in have for have in sets)}, time.monotonic())
        if not ids or self._incomplete is None:
            return set()
        return self._incomplete[0]

    @property
    def cursors(self) -> CursorCodec:
        if self._cursors is None:
            raise RuntimeError("the context pack is not started")
        return self._cursors

    # -- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self) -> None:
        store: RelationalStore = self.context.provider(STORE)
        if self.config.embed:
            await embeddings_off_loop(self.context.embeddings)  # the host keeps the chain; its first use is then quick
        await store.migrate(NAMESPACE, MIGRATIONS)
        self._store = store
        self.vectors = ChunkVectors(self.context.provider(VECTOR_STORE))
        self.live = LiveIndex(store, self.repo, refresh_seconds=self.config.refresh_seconds)
        await self.live.catch_up()
        options = self.config.ranking_options()
        self.ranker = Ranker(self.live.index, options)
        self.plain_ranker = Ranker(self.live.index, replace(options, structural=False, messages=False, graph=False))
        self._cursors = CursorCodec(bytes.fromhex(await self.repo.secret(store, "cursor", secrets.token_hex(32))))
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
        """Connectors declared in ``[plugins.context]`` exist in the store (added once, updated when changed); one no
        longer declared keeps its index and becomes the API's to change or remove."""
        assert self.connectors is not None
        declared_names = {(declared.tenant, declared.name) for declared in self.config.connectors}
        for row in await self.store.fetch_all("SELECT id, tenant, name FROM ctx_connectors WHERE origin = 'config'"):
            if (row["tenant"], row["name"]) not in declared_names:  # taken out of the file: the API's to manage now
                await self.repo.update_connector(self.store, row["id"], {"origin": "tool"})
                log.warning("context.connector_undeclared", tenant=row["tenant"], connector=row["name"])
        for number, declared in enumerate(self.config.connectors):
            raw = declared.model_dump()
            tenant = raw.pop("tenant")
            existing = await self.repo.connector_by_name(self.store, tenant, declared.name)
            try:
                if existing is None:
                    await self.connectors.add(tenant, raw, origin="config")
                else:
                    await self.connectors.update(tenant, existing["public_id"], raw)
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
            id=row["public_id"],
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

    async def list_connectors(self, tenant: str) -> list[ConnectorInfo]:
        return [await self.connector_info(row) for row in await self.repo.list_connectors(self.store, tenant)]

    async def get_connector(self, tenant: str, connector_id: str) -> ConnectorInfo:
        assert self.connectors is not None
        return await self.connector_info(await self.connectors.get(tenant, connector_id))

    def _policy(self, restricted: bool) -> TenantConnectorPolicy | None:
        return self.config.tenant_connectors if restricted else None

    async def add_connector(self, tenant: str, config: Mapping[str, Any], *, restricted: bool = False) -> ConnectorInfo:
        """Add a connector (``{"type", "name", ...the type's options}``); it is indexed by the next start.
        ``restricted``: an authenticated caller's, held to ``[plugins.context.tenant_connectors]``."""
        assert self.connectors is not None
        row = await self.connectors.add(tenant, config, policy=self._policy(restricted))
        return await self.connector_info(row)

    async def update_connector(
        self, tenant: str, connector_id: str, config: Mapping[str, Any], *, restricted: bool = False
    ) -> ConnectorChange:
        """Rename a connector and/or change its options; when what it indexes changed, start re-indexing it."""
        assert self.connectors is not None
        _not_declared(await self.connectors.get(tenant, connector_id), "changed")
        row, changed = await self.connectors.update(tenant, connector_id, config, policy=self._policy(restricted))
        job, note = None, ""
        if changed:
            try:
                started = await self.start_indexing(tenant, [connector_id], restricted=restricted)
                job, note = started.current_job, "its content changed: re-indexing it"
            except ToolError as exc:
                if exc.code != "conflict":
                    raise
                note = "its content changed: start an index job to re-index it when the running one finishes"
        return ConnectorChange(await self.connector_info(row), changed, job, note)

    async def remove_connector(self, tenant: str, connector_id: str) -> int:
        """Remove a connector with everything indexed from it (a job indexing it is stopped first); returns the
        number of chunks removed."""
        assert self.connectors is not None and self.vectors is not None and self.live is not None
        _not_declared(await self.connectors.get(tenant, connector_id), "removed")
        active = await self.jobs.active(tenant) if self.jobs else None
        if active is not None and connector_id in (active["connectors"] or []):
            await self.jobs.stop(active["id"])  # type: ignore[union-attr]
            await self.jobs.wait(active["id"])  # type: ignore[union-attr]
        removed = await self.connectors.remove(tenant, connector_id)
        await self.vectors.delete_everywhere(removed)
        await self.live.catch_up()
        return len(removed)

    # -- index control -----------------------------------------------------------------------------------------

    async def _selected(self, tenant: str, ids: Sequence[str] | None) -> list[dict[str, Any]]:
        """The tenant's connectors named by ``ids``: connector ids, connector types (every connector of the type, as
        the spec's ``["github", "slack"]``; an id is ``<type>-<name>``, so the two never clash) or ``"all"``."""
        rows = await self.repo.list_connectors(self.store, tenant)
        if not ids or "all" in ids:
            return rows
        by_id = {r["public_id"]: r for r in rows}
        types = {r["type"] for r in rows}
        unknown = [i for i in ids if i not in by_id and i not in types]
        if unknown:
            raise NotFound(
                f"unknown connector id(s): {', '.join(unknown)}",
                details={"field": "connectors", "unknown": unknown, "known": sorted(by_id)},
            )
        wanted = set(ids)
        return [r for r in rows if r["public_id"] in wanted or r["type"] in wanted]

    async def index_status(self, tenant: str) -> IndexControlOutput:
        """The running job (else the latest one) and the last completed one."""
        jobs = self.jobs
        assert jobs is not None
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

    async def stop_indexing(self, tenant: str) -> IndexControlOutput:
        """Ask the running job to stop after its current document (404 when none runs)."""
        jobs = self.jobs
        assert jobs is not None
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

    async def start_indexing(
        self, tenant: str, connectors: Sequence[str] | None = None, *, force: bool = False, restricted: bool = False
    ) -> IndexControlOutput:
        """Start a background job indexing ``connectors`` (public ids; default or ``"all"``: every connector of the
        tenant): incremental, or everything again with ``force``. One job per tenant at a time: while one runs,
        409 with its id. ``restricted``: an authenticated caller's job, whose connectors added over the API must
        still pass ``[plugins.context.tenant_connectors]`` (the operator may have narrowed it since)."""
        jobs = self.jobs
        assert jobs is not None
        selected = await self._selected(tenant, connectors)
        if not selected:
            raise field_error("connectors", "no connector to index: add one with context.connector_management")
        async with self._starting:  # check and start as one step (within this process)
            active = await jobs.active(tenant)
            if active is not None:
                raise _conflict(
                    f"an indexing job is already running ({active['completed']}/{active['total']} documents): "
                    "wait for it (status) or stop it",
                    {"job_id": active["id"], "status": active["status"]},
                )
            ids = [r["public_id"] for r in selected]
            row = await jobs.start(
                tenant,
                "reindex" if force else "index",
                ids,
                lambda handle: self._index_job(handle, selected, force, self._policy(restricted)),
            )
        return IndexControlOutput(
            action="force_reindex" if force else "start",
            status="running",
            message=f"indexing {len(ids)} connector(s) in the background; poll with action 'status'",
            current_job=_job_info(row),
            warning="every file is re-chunked and re-embedded; searches keep the old version until each file is "
            "replaced"
            if force
            else None,
        )

    async def estimated_minutes(self, tenant: str, kind: str) -> int | None:
        """How long a job of ``kind`` may take: the tenant's last completed one of that kind (rounded up)."""
        for row in await self.repo.jobs_of(self.store, tenant, ("completed",), limit=20):
            if row["kind"] == kind and row["finished_at"] is not None:
                return max(1, math.ceil((row["finished_at"] - row["started_at"]).total_seconds() / 60))
        return None

    async def _index_job(
        self, handle: JobHandle, connectors: list[dict[str, Any]], force: bool, policy: TenantConnectorPolicy | None
    ) -> None:
        await run_index_job(self, handle, connectors, force, policy)


def field_error(field: str, message: str) -> ValidationFailed:
    """Invalid input, naming the field."""
    return ValidationFailed(f"{field}: {message}", details={"errors": [{"field": field, "message": message}]})


def _not_declared(row: Mapping[str, Any], what: str) -> None:
    """A connector declared in the config file is the file's: the next start would declare it again."""
    if row["origin"] == "config":
        message = f"connector {row['public_id']!r} is declared in the config file ([[plugins.context.connectors]]): "
        raise Forbidden(message + f"it is {what} there, not through the API", details={"reason": "declared_in_config"})
