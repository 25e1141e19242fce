"""``GET /health`` (public: the deployment's own parts) and ``GET /status`` (the caller's tenant: its indexing and
its searches' performance)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from importlib import metadata
from typing import TYPE_CHECKING

import structlog

from gateway.api import ServiceUnavailable
from gateway_plugins.context.rest_models import Health, HealthServices, IndexingSummary, Performance, Status

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

log = structlog.get_logger(__name__)

__all__ = ["health", "status"]

PROBE_SECONDS = 2.0
"""How long the store may take to answer the health probe."""
ACTIVE_CONNECTOR = ("active", "indexing")


def _version() -> str:
    try:
        return metadata.version("mcp-gateway")
    except metadata.PackageNotFoundError:
        return "unknown"


async def health(service: ContextService) -> Health:
    """Whether the engine can serve: its store answers, the search index is loaded, connectors can be listed. Says
    nothing about any tenant (the probe is public). An engine that cannot serve answers 503 (the services, each
    ``healthy`` or ``unhealthy``, are in the error's detail)."""
    store_ok = True
    try:
        await asyncio.wait_for(service.repo.current_seq(service.store), PROBE_SECONDS)
    except Exception as exc:
        log.warning("context.health.store_unreachable", reason=f"{type(exc).__name__}: {exc}")
        store_ok = False
    state = "healthy" if store_ok else "unhealthy"
    services = HealthServices(
        index=state,
        search="healthy" if store_ok and service.live is not None else "unhealthy",
        connectors="healthy" if store_ok and service.connectors is not None else "unhealthy",
    )
    if any(value != "healthy" for value in services.model_dump().values()):
        raise ServiceUnavailable("the context engine cannot serve", details={"services": services.model_dump()})
    return Health(status="healthy", version=_version(), timestamp=datetime.now(UTC), services=services)


async def status(service: ContextService, tenant: str) -> Status:
    """The tenant's indexing (running or idle, the latest run, documents, connectors that synced) and the
    performance of its searches over the last minutes on this replica."""
    assert service.jobs is not None
    connectors = await service.repo.list_connectors(service.store, tenant)
    active = await service.jobs.active(tenant)
    latest = active or await service.jobs.latest(tenant)
    performance = service.search_stats.summary(tenant)
    return Status(
        indexing=IndexingSummary(
            status="active" if active else "idle",
            last_run=latest["started_at"] if latest else None,
            documents_indexed=sum(row["documents"] for row in connectors),
            connectors_active=sum(row["status"] in ACTIVE_CONNECTOR for row in connectors),
        ),
        performance=Performance(
            avg_query_latency_ms=performance.avg_query_latency_ms,
            queries_per_minute=performance.queries_per_minute,
            error_rate=performance.error_rate,
        ),
    )
