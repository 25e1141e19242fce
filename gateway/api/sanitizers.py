"""Sanitizer protocol: layers that find and redact secrets and personal data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

Category = Literal["secret", "pii", "internal"]


class FieldKind(StrEnum):
    """A hint of what a text is, so a layer can adapt (code has assignments, errors have paths)."""

    ERROR_MESSAGE = "error_message"
    CODE = "code"
    FREE_TEXT = "free_text"


@dataclass(frozen=True)
class Finding:
    """One sensitive span a layer found, with offsets into the text the layer received."""

    kind: str
    """What it is: ``aws_access_key``, ``email``, ``home_path_user``..."""
    category: Category
    start: int
    end: int
    confidence: float
    layer: str
    placeholder: str | None = None
    """What replaced it; ``None`` means the layer could not redact it (the pipeline then refuses)."""


class PlaceholderMap:
    """Stable placeholders for one submission: the same value gets the same ``<LABEL_n>`` in every field."""

    def __init__(self) -> None:
        self._by_value: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}
        self._categories: dict[tuple[str, str], Category | None] = {}

    def placeholder(self, label: str, value: str, *, category: Category | None = None) -> str:
        """The placeholder of ``value`` (``<LABEL_n>``). ``category``, when the layer knows it, decides whether
        the value is also swept from the submission's other fields (see :meth:`replaced`)."""
        key = (label, value)
        existing = self._by_value.get(key)
        if existing is not None:
            return existing
        number = self._counts.get(label, 0) + 1
        self._counts[label] = number
        token = f"<{label}_{number}>"
        self._by_value[key] = token
        self._categories[key] = category
        return token

    def __len__(self) -> int:
        return len(self._by_value)

    def replaced(self) -> list[tuple[str, str, Category | None]]:
        """Every (value, placeholder, category) given out so far, longest value first."""
        found = [(key[1], token, self._categories.get(key)) for key, token in self._by_value.items()]
        return sorted(found, key=lambda item: -len(item[0]))


@dataclass
class SanitizedText:
    text: str
    findings: list[Finding] = field(default_factory=list)


@runtime_checkable
class Sanitizer(Protocol):
    """One layer. It must never return the input unchanged when it found something it could not redact:
    it reports that finding with ``placeholder=None`` (or raises :class:`gateway.api.SanitizationFailed`)."""

    @property
    def name(self) -> str: ...

    async def sanitize(self, text: str, *, kind: FieldKind, placeholders: PlaceholderMap) -> SanitizedText: ...


@dataclass
class SanitizationReport:
    """The pipeline's answer for a set of fields."""

    fields: dict[str, str]
    findings: list[Finding] = field(default_factory=list)
    refused: bool = False
    reason: str | None = None
    confidence: float = 1.0
    """On success 1.0; on refusal, how sure the pipeline is that the submission holds sensitive data."""
    details: str | None = None
    """On refusal, a message for the submitter ("Detected N potential secrets in submission...")."""


class SanitizationService(Protocol):
    """The configured sanitizer pipeline, as a tool pack uses it."""

    async def sanitize_fields(self, fields: Mapping[str, tuple[str, FieldKind]]) -> SanitizationReport:
        """Run every configured layer for each field's kind. Fails closed: a layer error refuses."""

    async def sanitize_query(self, text: str) -> str:
        """Layer 1 only (speed), for search queries."""
