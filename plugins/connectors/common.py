"""Small pieces the hosted connectors share: cursors, document paths, times, and ``scan`` built on ``changes``."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from gateway.api import (
    ChangedDocument,
    DocumentContent,
    IncrementalConnector,
    NotFound,
    ScanResult,
    SourceDocument,
    ValidationFailed,
)

__all__ = [
    "content_of",
    "dump_cursor",
    "iso",
    "load_cursor",
    "match_path",
    "parse_time",
    "scan_by_changes",
    "source_document",
]


def load_cursor(cursor: str | None) -> dict[str, Any]:
    """A connector's own cursor (JSON), or an empty state for a full sync; a cursor it cannot read starts over."""
    if not cursor:
        return {}
    try:
        state = json.loads(cursor)
    except ValueError:
        return {}
    return state if isinstance(state, dict) else {}


def dump_cursor(state: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in state.items() if v not in (None, {}, [])}, sort_keys=True)


def parse_time(value: str | None) -> datetime:
    """An ISO 8601 time from a service (``Z``, ``+0000`` and ``+00:00`` offsets) as an aware UTC datetime."""
    if not value:
        return datetime.fromtimestamp(0, UTC)
    text = value.strip()
    if re.search(r"[+-]\d{4}$", text):
        text = text[:-2] + ":" + text[-2:]
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def iso(when: datetime) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def match_path(path: str, pattern: re.Pattern[str], shape: str) -> re.Match[str]:
    """The match of a document path against the connector's path shape. A path climbing out (``..``) or absolute
    is a validation error naming the field; any other unknown shape is simply not found."""
    if path.startswith("/") or ".." in path.split("/") or "\\" in path:
        raise ValidationFailed(
            f"a document path is relative and never climbs out ({shape})",
            details={"errors": [{"field": "path", "message": f"expected {shape}"}]},
        )
    found = pattern.fullmatch(path)
    if found is None:
        raise NotFound(f"no document {path!r} in this connector (paths look like {shape})", details={"path": path})
    return found


def source_document(document: ChangedDocument) -> SourceDocument:
    return SourceDocument(
        path=document.path,
        size=len(document.text.encode("utf-8")),
        last_modified=document.last_modified,
        source_type=document.source_type,
    )


def content_of(document: ChangedDocument) -> DocumentContent:
    return DocumentContent(
        path=document.path, text=document.text, mime_type=document.mime_type, last_modified=document.last_modified
    )


async def scan_by_changes(connector: IncrementalConnector) -> ScanResult:
    """Every document the source offers now: a full sync, kept in memory (for :meth:`Connector.scan`; the pack
    syncs hosted sources page by page instead)."""
    documents: dict[str, SourceDocument] = {}
    cursor: str | None = None
    while True:
        page = await connector.changes(cursor)
        for document in page.documents:
            documents[document.path] = source_document(document)
        for path in page.deleted:
            documents.pop(path, None)
        cursor = page.cursor
        if not page.more:
            return ScanResult(documents=list(documents.values()))
