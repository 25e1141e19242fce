"""Connector protocol: a source of documents a pack indexes (a local directory, a git host, a ticket system...).

Connectors are providers of kind ``connector``, offered through the same ``register(kind, name, factory,
config_model=...)`` door as embedders. A pack that indexes several sources builds one configured instance per
source with :meth:`gateway.api.PackContext.instantiate`. ``gateway/contracts/connector_contract.py`` is the suite a
connector must pass (subclass it to test a third-party one).

Paths are POSIX, relative to the connector's root, and are a document's stable identity within the connector.

Two shapes of source:

* a **file-shaped** source (a directory) is listed whole by :meth:`Connector.scan` and read path by path;
* a **hosted** source (issues, tickets, chat) is too large to list on every run and has no file to read back: it
  also implements :class:`IncrementalConnector`, whose :meth:`~IncrementalConnector.changes` hands over, page by
  page, the documents (with their text) changed since an opaque cursor. The indexing pack stores the cursor after
  each page, so an interrupted sync resumes where it stopped and the next sync asks only for what changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "ChangePage",
    "ChangedDocument",
    "Connector",
    "DocumentContent",
    "DocumentSection",
    "HistoryEntry",
    "IncrementalConnector",
    "ScanResult",
    "SkipReason",
    "SkippedDocument",
    "SourceDocument",
]

SkipReason = Literal["ignored", "binary", "too_large", "symlink", "unreadable", "hidden"]


@dataclass(frozen=True)
class SourceDocument:
    """A document the connector offers for indexing (metadata only; :meth:`Connector.read` gives the text)."""

    path: str
    size: int
    last_modified: datetime
    """Aware (UTC)."""
    source_type: str = "file"
    """The spec's source type (``file``, ``slack``, ``github``, ``jira``), used by search filters."""


@dataclass(frozen=True)
class SkippedDocument:
    """A document the connector left out, and why (so an empty index is never a mystery)."""

    path: str
    reason: SkipReason


@dataclass(frozen=True)
class ScanResult:
    documents: Sequence[SourceDocument]
    skipped: Sequence[SkippedDocument] = field(default_factory=tuple)


@dataclass(frozen=True)
class DocumentContent:
    """A document's text. Binary documents are refused by :meth:`Connector.read` instead."""

    path: str
    text: str
    mime_type: str
    last_modified: datetime


@dataclass(frozen=True)
class HistoryEntry:
    """One change of the source's history (a commit), newest first in every list."""

    id: str
    author: str
    timestamp: datetime
    message: str
    paths: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class Connector(Protocol):
    """A configured source of documents.

    ``read`` raises :class:`gateway.api.NotFound` for a path the source does not hold and
    :class:`gateway.api.Forbidden` for one outside it (``..``, a symlink leading out) or not offered (binary,
    ignored, too large). ``history`` returns ``[]`` when the source keeps none.
    """

    @property
    def type(self) -> str: ...

    async def scan(self) -> ScanResult:
        """Every document the source offers now, and the ones it leaves out with the reason."""

    async def read(self, path: str) -> DocumentContent: ...

    async def history(self, path: str | None = None, *, limit: int = 20) -> list[HistoryEntry]:
        """Recent changes of the whole source (``path`` None) or of one document, newest first."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class DocumentSection:
    """One part of a hosted document: the issue or message itself, a comment, a reply, a list of changed files.

    Each section is its own search result (chunk); ``text`` is what the reader sees, heading line included."""

    kind: str
    """``issue``, ``pull_request``, ``ticket``, ``thread``, ``message``, ``comment``, ``review``, ``reply``,
    ``files`` (at most 12 characters)."""
    text: str
    heading: str | None = None
    """A short label (``Comment by ada on 2025-01-02``), used as the chunk's name."""


@dataclass(frozen=True)
class ChangedDocument:
    """A document of a hosted source, new or changed since the cursor, with its text (there is no file to read)."""

    path: str
    """Stable identity within the connector (``org/repo/issues/42``, ``PROJ-7``, ``dev/1712345678.000100``)."""
    title: str
    sections: Sequence[DocumentSection]
    last_modified: datetime
    """When the source last changed it (aware, UTC): what ``date_range`` filters on."""
    source_type: str
    """The spec's source type: ``github``, ``jira``, ``slack`` (a third party may name its own)."""
    url: str | None = None
    """Where a person opens it."""
    keys: Sequence[str] = field(default_factory=tuple)
    """The ids people use for it (``PROJ-7``; ``org/repo#42`` and ``#42``): what a ticket id in a commit message,
    a branch name or ``work_context.open_ticket_ids`` is matched against."""
    files: Sequence[str] = field(default_factory=tuple)
    """Repository paths it changes (a pull request's files), linking it to the indexed code."""
    state: str | None = None
    """``open``, ``closed``, ``merged``, ``In Progress``..."""
    author: str | None = None
    mime_type: str = "text/markdown"

    @property
    def text(self) -> str:
        """The whole document: its sections, one after the other, separated by a blank line."""
        return "\n\n".join(section.text for section in self.sections)


@dataclass(frozen=True)
class ChangePage:
    """One page of changes: documents to store (replacing a stored one of the same path), paths to delete, and the
    cursor to pass next. The pack stores the documents, then the cursor; ``more`` False ends this sync, and its
    cursor is where the next sync starts."""

    documents: Sequence[ChangedDocument]
    cursor: str
    more: bool
    deleted: Sequence[str] = field(default_factory=tuple)


@runtime_checkable
class IncrementalConnector(Connector, Protocol):
    """A hosted source, synced by changes since a cursor instead of listed whole.

    ``changes(None)`` starts a full sync. A cursor is opaque to the caller (the connector's own JSON, say); it must
    stay valid across processes and restarts, and never hold a secret. Resuming with the cursor of the last stored
    page must not offer again what earlier pages offered (a document changed meanwhile may come again: the pack
    replaces it). Errors are :class:`gateway.api.ToolError` subclasses whose message a person can act on:
    :class:`gateway.api.Unauthenticated` for a rejected (revoked, expired) token, :class:`gateway.api.Forbidden`
    for missing access, :class:`gateway.api.NotFound` for a project/repository/channel that does not exist,
    :class:`gateway.api.RateLimitExceeded` when the service asks to wait longer than configured,
    :class:`gateway.api.ServiceUnavailable` when retries with backoff are exhausted.

    ``scan`` and ``read`` keep their meaning (``read`` fetches one document live and returns the same text as
    :attr:`ChangedDocument.text`), so the whole :class:`Connector` contract applies too.
    """

    async def changes(self, cursor: str | None) -> ChangePage:
        """The next page of documents changed since ``cursor`` (``None``: everything)."""
