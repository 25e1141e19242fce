"""Input and output models of the four tools. Inputs follow ``context-engine-api.md`` section 2 exactly (names,
types, enums, ``top_k`` default 20 and maximum 100); outputs are what ``structuredContent`` carries."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, field_validator

SourceType = Literal["file", "slack", "github", "jira"]

_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")


def _rfc3339(value: Any) -> Any:
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, str) and _RFC3339.fullmatch(value):
        return value
    raise ValueError("an RFC 3339 date-time with its offset, such as 2025-01-01T00:00:00Z")


DateTime = Annotated[datetime, BeforeValidator(_rfc3339), Strict(False)]
"""A JSON Schema ``date-time``: an RFC 3339 string with its offset (not a number, not a bare date, never naive)."""


class _In(BaseModel):
    """An input read from JSON: types as the schema says (no ``"5"`` for 5, no ``0`` for false), unknown keys
    refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


PATH_MAX = 4096
"""The longest path accepted (Linux's ``PATH_MAX``): a longer one names no file."""
TicketId = Annotated[str, Field(max_length=200)]


class WorkContext(_In):
    active_file: str | None = Field(
        None, max_length=PATH_MAX, description="Repository-relative path of the file the user has open."
    )
    git_branch: str | None = Field(None, max_length=1000)
    open_ticket_ids: list[TicketId] | None = Field(None, max_length=100)


class DateRange(_In):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)

    from_: DateTime | None = Field(None, alias="from", description="Only files modified at or after (date-time).")
    to: DateTime | None = Field(None, description="Only files modified at or before (date-time).")


class SearchFilters(_In):
    source_types: list[SourceType] | None = None
    date_range: DateRange | None = None


class SearchInput(_In):
    query: str = Field(min_length=1, max_length=10_000, description="The user's natural language query.")
    work_context: WorkContext | None = None
    top_k: int = Field(20, ge=1, le=100, description="Results to return (default 20, at most 100).")
    filters: SearchFilters | None = None

    @field_validator("query")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must contain something to search for, not only whitespace")
        return value


class ResultMetadata(BaseModel):
    type: str = Field(
        description="function, method, class, module, doc or text; for hosted sources issue, pull_request, ticket, "
        "thread, message, comment, review, reply or files"
    )
    symbol: str | None = Field(None, description="Qualified name as the language writes it")
    lines: str = Field(description='"start-end", 1-based, inclusive')
    language: str
    last_modified: datetime
    connector_id: str
    path: str
    source_type: str = Field("file", description="file, github, jira, slack (or a third-party connector's type)")
    title: str | None = Field(None, description="An issue's, ticket's or thread's title (hosted sources)")
    url: str | None = Field(None, description="Where a person opens it (hosted sources)")


class SearchResult(BaseModel):
    source: str = Field(description="<source type>://<path>: file://src/app.py, github://org/repo/issues/42")
    content: str
    score: float
    metadata: ResultMetadata


class QueryMetadata(BaseModel):
    execution_time_ms: int
    sources_searched: int
    chunks_searched: int
    embedder: str | None = Field(
        None,
        description="The embedder whose vectors served the dense part; None: lexical only (dense off or down, or "
        "the embedder has no vectors of these sources: note says)",
    )
    index_status: Literal["ready", "indexing", "empty", "no_connectors"]
    note: str | None = Field(
        None,
        description="Why there may be nothing to find (not indexed yet, still indexing), or what the search left "
        "out (an active_file under no connector's root, dense vectors missing or unavailable)",
    )


class SearchOutput(BaseModel):
    results: list[SearchResult]
    total_results: int
    query_metadata: QueryMetadata


class RelatedInput(_In):
    file_path: str | None = Field(None, max_length=PATH_MAX, description="Path to the file to get related info for")
    ticket_id: TicketId | None = Field(None, description="Ticket ID to get related info for")


class Commit(BaseModel):
    id: str
    author: str
    timestamp: datetime
    message: str
    files: list[str] = Field(default_factory=list)


class AuthorStat(BaseModel):
    author: str
    commits: int


class RelatedOutput(BaseModel):
    file_path: str | None = None
    ticket_id: str | None = None
    connector_id: str | None = None
    summary: str
    commits: list[Commit] = Field(default_factory=list)
    authors: list[AuthorStat] = Field(default_factory=list)
    imports: list[str] = Field(default_factory=list, description="Indexed files this file imports")
    imported_by: list[str] = Field(default_factory=list, description="Indexed files that import this file")
    co_changed: list[str] = Field(default_factory=list, description="Files most often changed in the same commits")
    symbols: list[str] = Field(default_factory=list, description="Definitions in the file")
    pull_requests: list[dict[str, Any]] = Field(default_factory=list)
    tickets: list[dict[str, Any]] = Field(default_factory=list)
    discussions: list[dict[str, Any]] = Field(default_factory=list)


class IndexControlInput(_In):
    action: Literal["start", "stop", "status", "force_reindex"]
    connectors: list[str] | None = Field(
        None, description="Connector ids or types, or 'all' (default: all of the caller's)"
    )


class JobProgress(BaseModel):
    completed: int
    total: int
    current_connector: str | None = None


class JobInfo(BaseModel):
    id: str
    kind: str
    status: str
    connectors: list[str]
    started_at: datetime
    finished_at: datetime | None = None
    progress: JobProgress
    documents_processed: int
    duration_seconds: float | None = None
    error: str | None = None


class IndexControlOutput(BaseModel):
    action: str
    status: str = Field(description="queued, running, stopping, stopped, idle, completed, failed, interrupted")
    message: str
    current_job: JobInfo | None = None
    last_completed: JobInfo | None = None
    warning: str | None = None


class ConnectorInput(_In):
    action: Literal["list", "add", "update", "remove"]
    connector_id: str | None = None
    connector_config: dict[str, Any] | None = Field(
        None, description='For add/update: {"type": <file|github|jira|slack|...>, "name": ...} and the type\'s options'
    )


class ConnectorStats(BaseModel):
    documents_indexed: int
    chunks: int
    skipped: dict[str, int] = Field(default_factory=dict, description="Files left out, by reason")
    last_error: str | None = None


class ConnectorInfo(BaseModel):
    id: str
    type: str
    name: str
    status: str
    origin: Literal["tool", "config"]
    created_at: datetime
    last_sync: datetime | None = None
    config: dict[str, Any]
    stats: ConnectorStats


class ConnectorOutput(BaseModel):
    action: str
    message: str
    connectors: list[ConnectorInfo] = Field(default_factory=list)
