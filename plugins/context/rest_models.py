"""Request and response bodies of the REST API v1 (``context-engine-api.md`` section 1.4), beside the tool models
of :mod:`.models`, which they reuse where the spec's shapes are the same (search results, connector details)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator

from gateway_plugins.context.models import ConnectorInfo, JobProgress, QueryMetadata, SearchInput, SearchResult

CONNECTOR_ID = r"^[A-Za-z0-9][A-Za-z0-9._~-]{0,119}$"


class _In(BaseModel):
    """A JSON body: types as the schema says, unknown keys refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _Query(BaseModel):
    """Path and query parameters (text on the wire: ``limit=5`` is read as the number 5), unknown ones refused."""

    model_config = ConfigDict(extra="forbid")


def _true_only(value: Any) -> Any:
    if value is not True:
        raise ValueError("must be true (the JSON literal) to confirm")
    return value


# -- health and status ----------------------------------------------------------------------------------------


class HealthServices(BaseModel):
    index: Literal["healthy", "unhealthy"] = Field(description="The relational store holding the index answers")
    search: Literal["healthy", "unhealthy"] = Field(description="The in-memory search index is loaded")
    connectors: Literal["healthy", "unhealthy"] = Field(description="Connectors can be built and listed")


class Health(BaseModel):
    status: Literal["healthy"] = Field(description="An engine that cannot serve answers 503 instead")
    version: str
    timestamp: datetime
    services: HealthServices


class IndexingSummary(BaseModel):
    status: Literal["active", "idle"] = Field(description="active while an index job of the caller's tenant runs")
    last_run: datetime | None = Field(description="When the tenant's latest index job started")
    documents_indexed: int = Field(description="Documents indexed across the tenant's connectors")
    connectors_active: int = Field(description="Connectors whose last sync succeeded (status active or indexing)")


class Performance(BaseModel):
    avg_query_latency_ms: float = Field(description="Mean search latency over the last 5 minutes (this replica)")
    queries_per_minute: float
    error_rate: float = Field(description="Share of those searches that failed (invalid input is not a failure)")


class Status(BaseModel):
    indexing: IndexingSummary
    performance: Performance


# -- search ---------------------------------------------------------------------------------------------------


class PaginationIn(_In):
    cursor: str | None = Field(
        None, max_length=2000, description="next_cursor of the previous page (opaque; the same query and filters)"
    )
    limit: int | None = Field(
        None, ge=1, le=100, description="Results per page (default: top_k, else the tenant's default_top_k)"
    )


class RestSearchInput(SearchInput):
    pagination: PaginationIn | None = None


class PageInfo(BaseModel):
    has_more: bool
    next_cursor: str | None = Field(description="Send it back as pagination.cursor, with the same query")
    total_results: int = Field(description="Results the query has (at most the tenant's search.max_results)")


class RestSearchOutput(BaseModel):
    results: list[SearchResult]
    pagination: PageInfo
    query_metadata: QueryMetadata


class SuggestionsInput(_Query):
    q: str = Field(min_length=1, max_length=200, description="The partial query")
    limit: int = Field(5, ge=1, le=50, description="Number of suggestions")


class Suggestions(BaseModel):
    suggestions: list[str] = Field(description="Indexed symbols, paths and titles matching q (prefix, then fuzzy)")


# -- index control --------------------------------------------------------------------------------------------


class IndexStartInput(_In):
    connectors: list[str] | None = Field(
        None, max_length=100, description="Connector ids or types (default, or 'all': every connector of the caller's)"
    )
    force_full_reindex: bool = Field(False, description="Re-chunk and re-embed every document")


class IndexStarted(BaseModel):
    job_id: str
    status: str = Field(description="The job's status (running)")
    estimated_duration_minutes: int | None = Field(
        description="From the tenant's last completed job of the same kind; null without one"
    )
    message: str


class ForceReindexInput(_In):
    confirm_destructive: Annotated[Literal[True], BeforeValidator(_true_only)] = Field(
        description="Must be true: every document is re-chunked and re-embedded"
    )
    connectors: list[str] = Field(
        default_factory=lambda: ["all"], max_length=100, description="Ids or types, or ['all']"
    )


class ReindexStarted(BaseModel):
    job_id: str
    status: str
    warning: str


class IndexStopped(BaseModel):
    status: str = Field(description="stopping")
    message: str


class CurrentJob(BaseModel):
    id: str
    started_at: datetime
    progress: JobProgress
    error: str | None = Field(
        None,
        description="Why the job, or some of its connectors, failed or stopped (a job whose connectors all failed "
        "still ends completed: this names them); null when nothing went wrong",
    )


class LastCompleted(BaseModel):
    finished_at: datetime
    duration_minutes: float
    documents_processed: int


class IndexStatus(BaseModel):
    status: str = Field(description="running, stopping, or the latest job's outcome (completed, failed...); idle")
    current_job: CurrentJob | None = Field(description="The running job, else the latest one")
    last_completed: LastCompleted | None


# -- connectors -----------------------------------------------------------------------------------------------


def _top_level_only(value: dict[str, Any] | None) -> dict[str, Any] | None:
    clash = sorted({"type", "name"} & set(value or {}))
    if clash:
        raise ValueError(f"{', '.join(clash)}: given at the top level of the body, not inside config")
    return value


class ConnectorList(BaseModel):
    connectors: list[ConnectorInfo]


class ConnectorRef(_Query):
    id: str = Field(pattern=CONNECTOR_ID, description="The connector's id")


class ConnectorCreate(_In):
    type: str = Field(min_length=1, max_length=60, description="An installed connector type, such as 'file'")
    name: str = Field(min_length=1, max_length=200, description="Unique among the caller's connectors")
    config: dict[str, Any] = Field(default_factory=dict, description="The type's options ('file': root, exclude...)")

    _no_reserved = field_validator("config")(_top_level_only)


class ConnectorCreated(BaseModel):
    id: str
    type: str
    name: str
    status: str
    created_at: datetime


class ConnectorUpdate(_In):
    id: str = Field(pattern=CONNECTOR_ID)
    name: str | None = Field(None, min_length=1, max_length=200)
    config: dict[str, Any] | None = Field(None, description="Options to change (merged into the current ones)")

    _no_reserved = field_validator("config")(_top_level_only)


class ConnectorUpdated(BaseModel):
    id: str
    status: str = Field(description="reconfiguring when a re-index of the connector started, else its status")
    message: str
    job_id: str | None = Field(None, description="The re-index job started for the change, if any")
