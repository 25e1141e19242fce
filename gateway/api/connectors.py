"""Connector protocol: a source of documents a pack indexes (a local directory, a git host, a ticket system...).

Connectors are providers of kind ``connector``, offered through the same ``register(kind, name, factory,
config_model=...)`` door as embedders. A pack that indexes several sources builds one configured instance per
source with :meth:`gateway.api.PackContext.instantiate`. ``tests/contracts/connector_contract.py`` is the suite a
connector must pass (subclass it to test a third-party one).

Paths are POSIX, relative to the connector's root, and are a document's stable identity within the connector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

__all__ = [
    "Connector",
    "DocumentContent",
    "HistoryEntry",
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
