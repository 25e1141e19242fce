"""The REST API v1 of ``context-engine-api.md`` section 1.4, as routes the host serves under ``/api/v1``.

Handlers only translate between the spec's bodies and the service: every operation is the same
:class:`~gateway_plugins.context.service.ContextService` method (or read function taking the service) that the MCP
tools call. The scopes are the spec's (:mod:`.scopes`); each route's rate-limit tier is the spec's size for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from gateway.api import CallContext, NoInput, RateTier, RestRoute, ToolError, ValidationFailed
from gateway_plugins.context.models import ConnectorInfo, IndexControlOutput, JobInfo
from gateway_plugins.context.overview import health, status
from gateway_plugins.context.pages import search_page
from gateway_plugins.context.rest_models import (
    ConnectorCreate,
    ConnectorCreated,
    ConnectorList,
    ConnectorRef,
    ConnectorUpdate,
    ConnectorUpdated,
    CurrentJob,
    ForceReindexInput,
    Health,
    IndexStarted,
    IndexStartInput,
    IndexStatus,
    IndexStopped,
    LastCompleted,
    ReindexStarted,
    RestSearchInput,
    RestSearchOutput,
    Status,
    Suggestions,
    SuggestionsInput,
)
from gateway_plugins.context.scopes import (
    CONFIG_READ,
    CONFIG_WRITE,
    CONNECTORS_READ,
    CONNECTORS_WRITE,
    INDEX_READ,
    INDEX_WRITE,
    SEARCH_READ,
)
from gateway_plugins.context.service import DEFAULT_TENANT, ContextService
from gateway_plugins.context.settings import ConfigPatch, ConfigUpdated, ConfigView, patch_config, read_config
from gateway_plugins.context.suggestions import suggest
from gateway_plugins.context.tenant_policy import restricted

__all__ = ["TIERS", "build_routes"]

TIERS = {
    "status": RateTier("status", 10),
    "suggestions": RateTier("suggestions", 50),
    "index_status": RateTier("index_status", 30),
    "force_reindex": RateTier("force_reindex", 5),
    "connectors_write": RateTier("connectors_write", 10),
    "connectors_delete": RateTier("connectors_delete", 5),
    "config_write": RateTier("config_write", 2),
}
"""The spec's per-endpoint limits (requests per minute) beyond the host's four tiers (``search`` 100, ``index`` 10,
``connectors`` 20, ``config`` 5); each can be resized by name in ``[rest.tiers]``."""


def _tenant(ctx: CallContext) -> str:
    return ctx.principal.tenant or DEFAULT_TENANT


def _rest_field(field: str) -> str:
    """A field named as the tool sees it (``connector_config.root``) named as the REST body has it
    (``config.root``; ``type`` and ``name`` at the top level; ``connector_id`` is the path's ``id``)."""
    if field == "connector_id":
        return "id"
    if field.startswith("connector_config."):
        rest = field.removeprefix("connector_config.")
        return rest if rest in ("type", "name") else f"config.{rest}"
    return field


@contextmanager
def _rest_fields() -> Iterator[None]:
    """Errors of the connector operations, with their fields named as the REST request has them."""
    try:
        yield
    except ToolError as exc:
        details = dict(exc.details)
        message = exc.message
        if "field" in details:
            details["field"] = _rest_field(str(details["field"]))
        if isinstance(details.get("errors"), list):
            details["errors"] = [dict(e, field=_rest_field(str(e.get("field", "")))) for e in details["errors"]]
            message = "; ".join(f"{e['field']}: {e.get('message', '')}" for e in details["errors"])
            if isinstance(exc, ValidationFailed):
                message = f"invalid request: {message}"
        raise type(exc)(message, details=details, code=exc.code, http_status=exc.http_status) from None


def _index_status(out: IndexControlOutput) -> IndexStatus:
    job, done = out.current_job, out.last_completed
    return IndexStatus(
        status=out.status,
        current_job=CurrentJob(id=job.id, started_at=job.started_at, progress=job.progress, error=job.error)
        if job
        else None,
        last_completed=LastCompleted(
            finished_at=done.finished_at,
            duration_minutes=round((done.duration_seconds or 0.0) / 60, 2),
            documents_processed=done.documents_processed,
        )
        if done and done.finished_at
        else None,
    )


def build_routes(service: ContextService) -> list[RestRoute]:
    async def get_health(args: NoInput, ctx: CallContext) -> Health:
        return await health(service)

    async def get_status(args: NoInput, ctx: CallContext) -> Status:
        return await status(service, _tenant(ctx))

    async def post_search(args: RestSearchInput, ctx: CallContext) -> RestSearchOutput:
        return await search_page(service, _tenant(ctx), args)

    async def get_suggestions(args: SuggestionsInput, ctx: CallContext) -> Suggestions:
        return Suggestions(suggestions=await suggest(service, _tenant(ctx), args.q, args.limit))

    async def start(ctx: CallContext, connectors: list[str] | None, force: bool) -> tuple[IndexControlOutput, JobInfo]:
        out = await service.start_indexing(_tenant(ctx), connectors, force=force, restricted=restricted(ctx))
        assert out.current_job is not None
        return out, out.current_job

    async def post_index_start(args: IndexStartInput, ctx: CallContext) -> IndexStarted:
        tenant = _tenant(ctx)
        _, job = await start(ctx, args.connectors, args.force_full_reindex)
        return IndexStarted(
            job_id=job.id,
            status=job.status,
            estimated_duration_minutes=await service.estimated_minutes(tenant, job.kind),
            message=f"indexing {len(job.connectors)} connector(s) in the background; follow it with "
            "GET /api/v1/index/status",
        )

    async def post_force_reindex(args: ForceReindexInput, ctx: CallContext) -> ReindexStarted:
        out, job = await start(ctx, args.connectors, True)
        return ReindexStarted(job_id=job.id, status=job.status, warning=out.warning or "")

    async def post_index_stop(args: NoInput, ctx: CallContext) -> IndexStopped:
        out = await service.stop_indexing(_tenant(ctx))
        return IndexStopped(status=out.status, message=out.message)

    async def get_index_status(args: NoInput, ctx: CallContext) -> IndexStatus:
        return _index_status(await service.index_status(_tenant(ctx)))

    async def get_connectors(args: NoInput, ctx: CallContext) -> ConnectorList:
        return ConnectorList(connectors=await service.list_connectors(_tenant(ctx)))

    async def get_connector(args: ConnectorRef, ctx: CallContext) -> ConnectorInfo:
        with _rest_fields():
            return await service.get_connector(_tenant(ctx), args.id)

    async def post_connector(args: ConnectorCreate, ctx: CallContext) -> ConnectorCreated:
        with _rest_fields():
            config = {**args.config, "type": args.type, "name": args.name}
            info = await service.add_connector(_tenant(ctx), config, restricted=restricted(ctx))
        return ConnectorCreated(
            id=info.id, type=info.type, name=info.name, status=info.status, created_at=info.created_at
        )

    async def put_connector(args: ConnectorUpdate, ctx: CallContext) -> ConnectorUpdated:
        changes = {**(args.config or {}), **({"name": args.name} if args.name is not None else {})}
        with _rest_fields():
            change = await service.update_connector(_tenant(ctx), args.id, changes, restricted=restricted(ctx))
        if change.job is not None:
            state, message = "reconfiguring", f"configuration updated; re-indexing started (job {change.job.id})"
        else:
            state, message = (
                change.connector.status,
                "configuration updated" + (f"; {change.note}" if change.note else ""),
            )
        return ConnectorUpdated(id=args.id, status=state, message=message, job_id=change.job.id if change.job else None)

    async def delete_connector(args: ConnectorRef, ctx: CallContext) -> None:
        with _rest_fields():
            await service.remove_connector(_tenant(ctx), args.id)

    async def get_config(args: NoInput, ctx: CallContext) -> ConfigView:
        return await read_config(service, _tenant(ctx))

    async def patch_config_route(args: ConfigPatch, ctx: CallContext) -> ConfigUpdated:
        return await patch_config(service, _tenant(ctx), args)

    index_write = {"scope": INDEX_WRITE, "tier": "index"}
    read_connectors = {"scope": CONNECTORS_READ, "tier": "connectors"}
    write_connectors = {"scope": CONNECTORS_WRITE, "tier": TIERS["connectors_write"]}
    return [
        RestRoute("GET", "/health", "Health of the context engine", get_health, output_model=Health, public=True),
        RestRoute(
            "GET",
            "/status",
            "Indexing and search performance of the caller's tenant",
            get_status,
            output_model=Status,
            scope=INDEX_READ,
            tier=TIERS["status"],
        ),
        RestRoute(
            "POST",
            "/search",
            "Hybrid search over the caller's indexed sources, paginated",
            post_search,
            RestSearchInput,
            RestSearchOutput,
            scope=SEARCH_READ,
            tier="search",
            description="Ranks up to the tenant's search.max_results results once; pages of pagination.limit "
            "(default top_k) follow next_cursor, which is bound to the query, its filters and the tenant.",
        ),
        RestRoute(
            "GET",
            "/search/suggestions",
            "Completions of a partial query from indexed symbols, titles and paths",
            get_suggestions,
            SuggestionsInput,
            Suggestions,
            scope=SEARCH_READ,
            tier=TIERS["suggestions"],
        ),
        RestRoute(
            "POST",
            "/index/start",
            "Start indexing (incremental unless force_full_reindex)",
            post_index_start,
            IndexStartInput,
            IndexStarted,
            status=202,
            errors=(404, 409),
            **index_write,
        ),
        RestRoute(
            "POST",
            "/index/stop",
            "Stop the running index job gracefully",
            post_index_stop,
            output_model=IndexStopped,
            errors=(404,),
            **index_write,
        ),
        RestRoute(
            "GET",
            "/index/status",
            "Progress of the running index job and the last completed one",
            get_index_status,
            output_model=IndexStatus,
            scope=INDEX_READ,
            tier=TIERS["index_status"],
        ),
        RestRoute(
            "POST",
            "/index/force-reindex",
            "Re-chunk and re-embed everything (confirm_destructive: true)",
            post_force_reindex,
            ForceReindexInput,
            ReindexStarted,
            status=202,
            errors=(404, 409),
            scope=INDEX_WRITE,
            tier=TIERS["force_reindex"],
        ),
        RestRoute(
            "GET",
            "/connectors",
            "The caller's connectors",
            get_connectors,
            output_model=ConnectorList,
            **read_connectors,
        ),
        RestRoute(
            "POST",
            "/connectors",
            "Add a connector",
            post_connector,
            ConnectorCreate,
            ConnectorCreated,
            status=201,
            errors=(409,),
            **write_connectors,
        ),
        RestRoute(
            "GET",
            "/connectors/{id}",
            "A connector with its statistics",
            get_connector,
            ConnectorRef,
            ConnectorInfo,
            **read_connectors,
        ),
        RestRoute(
            "PUT",
            "/connectors/{id}",
            "Rename a connector or change its options (re-indexes it)",
            put_connector,
            ConnectorUpdate,
            ConnectorUpdated,
            errors=(409,),
            **write_connectors,
        ),
        RestRoute(
            "DELETE",
            "/connectors/{id}",
            "Remove a connector and everything indexed from it",
            delete_connector,
            ConnectorRef,
            status=204,
            scope=CONNECTORS_WRITE,
            tier=TIERS["connectors_delete"],
        ),
        RestRoute(
            "GET",
            "/config",
            "The caller's tenant's settings",
            get_config,
            output_model=ConfigView,
            scope=CONFIG_READ,
            tier="config",
        ),
        RestRoute(
            "PATCH",
            "/config",
            "Change the caller's tenant's search settings",
            patch_config_route,
            ConfigPatch,
            ConfigUpdated,
            scope=CONFIG_WRITE,
            tier=TIERS["config_write"],
        ),
    ]
