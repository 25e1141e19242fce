"""The GIM data models of the API reference (rev 2), as pydantic models.

These are the stored shapes: the repository persists them through the relational store and the tools build their
answers from them. Tool input/output models live in :mod:`gateway_plugins.gim.schemas`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

Provider = Literal["anthropic", "openai", "google", "meta", "mistral", "groq", "together", "local", "other"]
PROVIDERS: tuple[str, ...] = Provider.__args__  # type: ignore[attr-defined]
ContributionType = Literal["environment", "symptom", "model_quirk", "validation"]
EnvActionType = Literal["install", "upgrade", "downgrade", "config", "flag", "command"]
UsageEventType = Literal["search", "fix_retrieved", "fix_applied", "fix_confirmed", "issue_submitted"]
IssueStatus = Literal["active", "superseded", "invalid"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ModelInfo(_Model):
    """Information about an AI model."""

    provider: Provider
    model_name: str
    model_version: str | None = None
    behavior_notes: list[str] = Field(default_factory=list)


class EnvironmentInfo(_Model):
    """Technical environment where an issue occurred."""

    language: str | None = None
    language_version: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    os: str | None = None
    os_version: str | None = None
    additional_context: dict[str, str] = Field(default_factory=dict)

    def coverage_key(self) -> str | None:
        """A short label of this environment (``python 3.11 / langchain 0.2 / macos``), ``None`` when empty."""
        parts = [
            " ".join(p for p in (self.language, self.language_version) if p),
            " ".join(p for p in (self.framework, self.framework_version) if p),
            " ".join(p for p in (self.os, self.os_version) if p),
        ]
        label = " / ".join(p for p in parts if p).strip().lower()
        return label or None


class EnvAction(_Model):
    """A single action to resolve an issue."""

    order: int
    type: EnvActionType
    command: str
    explanation: str


class Constraints(_Model):
    """Working conditions and incompatibilities for a fix."""

    working_versions: dict[str, str] = Field(default_factory=dict)
    incompatible_with: list[str] = Field(default_factory=list)
    required_environment: list[str] = Field(default_factory=list)


class VerificationStep(_Model):
    """A step to verify a fix worked."""

    order: int
    command: str
    expected_output: str


class FixBundle(_Model):
    """A complete, actionable fix for an issue."""

    env_actions: list[EnvAction]
    constraints: Constraints = Field(default_factory=Constraints)
    verification: list[VerificationStep]
    patch_diff: str | None = None
    code_fix: str | None = None

    def summary(self, limit: int = 600) -> str:
        """What the fix does in a few words: the actions' explanations (or commands), then the code fix."""
        parts = [a.explanation or a.command for a in self.env_actions]
        if self.code_fix:
            parts.append(self.code_fix.strip().splitlines()[0])
        return " ".join(p.strip() for p in parts if p and p.strip())[:limit]


class ValidationResult(_Model):
    """The outcome a contributor observed when applying the master's fix (the spec leaves it open)."""

    success: bool
    notes: str | None = None


class MasterIssue(_Model):
    """A canonical issue with aggregated knowledge."""

    id: UUID
    canonical_title: str
    root_cause_category: str
    description: str | None = None
    root_cause: str = ""
    affected_models: list[ModelInfo] = Field(default_factory=list)
    model_specific_notes: dict[str, str] = Field(default_factory=dict)
    fix_bundle: FixBundle
    confidence_score: float
    child_issue_count: int = 0
    environment_coverage: list[str] = Field(default_factory=list)
    verification_count: int = 0
    """Identities whose current vote says the fix worked (one vote per identity; see ``gim.usage``)."""
    last_confirmed_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    status: IssueStatus = "active"


class ChildIssue(_Model):
    """A specific instance of an issue that contributes to a :class:`MasterIssue`."""

    id: UUID
    master_issue_id: UUID
    contribution_type: ContributionType
    environment: EnvironmentInfo
    symptoms: list[str] = Field(default_factory=list)
    model_info: ModelInfo
    validation_result: ValidationResult | None = None
    sanitized_error: str
    sanitized_context: str
    created_at: datetime


class UsageEvent(_Model):
    """A single usage event for analytics."""

    id: UUID
    event_type: UsageEventType
    issue_id: UUID | None = None
    session_id: str
    model: str | None = None
    provider: str | None = None
    success: bool | None = None
    timestamp: datetime


class IssueUsageStats(_Model):
    """Usage statistics for a specific issue (event counts), with the issue's votes beside them.

    total_resolved counts every successful confirmation (repeats included); verification_count and failure_count
    count identities by their current vote, one vote per identity (definitions: gateway_plugins.gim.usage)."""

    issue_id: UUID
    total_queries: int = 0
    total_fix_retrieved: int = 0
    total_fix_applied: int = 0
    total_resolved: int = Field(default=0, description="Successful confirmations, every one (repeats included)")
    resolution_rate: float = 0.0
    last_queried_at: datetime | None = None
    last_resolved_at: datetime | None = None
    verification_count: int = Field(
        default=0, description="Identities whose current vote says the fix worked (one vote per identity)"
    )
    failure_count: int = Field(
        default=0, description="Identities whose current vote says the fix did not work (one vote per identity)"
    )


class GlobalUsageStats(_Model):
    """Global usage statistics across all issues."""

    total_queries: int = 0
    total_issues_resolved: int = 0
    total_issues_submitted: int = 0
    active_sessions_24h: int = 0
    queries_24h: int = 0
    resolutions_24h: int = 0
    top_queried_issues: list[UUID] = Field(default_factory=list)
    top_resolved_issues: list[UUID] = Field(default_factory=list)
