"""Input and output models of the five GIM tools, matching the API reference (rev 2).

The host derives each tool's ``inputSchema``/``outputSchema`` from these models, so field names, required
fields, enums and defaults here are the contract clients see.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from gateway_plugins.gim.models import EnvActionType, FixBundle, ModelInfo, UsageEventType

SearchProvider = Literal["anthropic", "openai", "google", "meta", "mistral", "other"]

_TEXT = 200_000
"""Upper bound of any free-text field (a long stack trace fits; a multi-megabyte paste does not)."""


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SearchEnvironment(_Input):
    language: str | None = None
    framework: str | None = None
    os: str | None = None


class SearchIssuesInput(_Input):
    error_message: str = Field(min_length=1, max_length=_TEXT, description="The error message or stack trace")
    model: str | None = Field(default=None, description="Model name (e.g., claude-3-opus-20240229)")
    provider: SearchProvider | None = Field(
        default=None, description="Provider (e.g., anthropic, openai, google, meta, mistral)"
    )
    environment: SearchEnvironment | None = None
    limit: int = Field(default=10, ge=1, le=100, description="Maximum number of results to return")
    offset: int = Field(default=0, ge=0, le=10_000, description="Number of results to skip (offset pagination)")


class IssueSummary(BaseModel):
    issue_id: str
    canonical_title: str
    root_cause_category: str
    relevance_score: float
    confidence_score: float
    verification_count: int
    last_confirmed_at: datetime | None = None
    affected_models: list[ModelInfo] = Field(default_factory=list)


class SearchIssuesOutput(BaseModel):
    issues: list[IssueSummary]
    total_results: int
    limit: int
    offset: int
    embedder: str | None = Field(default=None, description="Id of the embedder that served the query")


class GetFixBundleInput(_Input):
    issue_id: str = Field(min_length=1, max_length=64, description="The master issue ID (UUID)")


class FixBundleOutput(BaseModel):
    issue_id: str
    canonical_title: str
    root_cause: str
    fix_bundle: FixBundle
    confidence_score: float
    verification_count: int


class EnvActionInput(_Input):
    order: int | None = Field(default=None, ge=1)
    type: EnvActionType
    command: str = Field(max_length=_TEXT)
    explanation: str = Field(default="", max_length=_TEXT)


class ConstraintsInput(_Input):
    working_versions: dict[str, str] = Field(default_factory=dict)
    incompatible_with: list[str] = Field(default_factory=list)
    required_environment: list[str] = Field(default_factory=list)


class VerificationInput(_Input):
    order: int | None = Field(default=None, ge=1)
    command: str = Field(max_length=_TEXT)
    expected_output: str = Field(default="", max_length=_TEXT)


class FixBundleInput(_Input):
    env_actions: list[EnvActionInput] = Field(max_length=100)
    constraints: ConstraintsInput | None = None
    verification: list[VerificationInput] = Field(max_length=100)
    code_fix: str | None = Field(default=None, max_length=_TEXT, description="The corrected code snippet")
    patch_diff: str | None = Field(default=None, max_length=_TEXT, description="Unified diff of the fix")


class SubmitEnvironment(_Input):
    language: str | None = None
    language_version: str | None = None
    framework: str | None = None
    framework_version: str | None = None
    os: str | None = None


class SubmitIssueInput(_Input):
    error_description: str = Field(
        min_length=1, max_length=_TEXT, description="Clear description of the error (will be sanitized)"
    )
    error_message: str | None = Field(
        default=None, max_length=_TEXT, description="The actual error message or stack trace (will be sanitized)"
    )
    code_snippet: str | None = Field(
        default=None,
        max_length=_TEXT,
        description="Minimal code that reproduces the issue. MUST be sanitized: no secrets, no PII, no business "
        "logic, generic names only.",
    )
    root_cause: str = Field(
        min_length=1, max_length=_TEXT, description="What caused the issue (e.g., 'version mismatch', 'missing config')"
    )
    fix_bundle: FixBundleInput = Field(description="The working solution - REQUIRED")
    model: str = Field(min_length=1, max_length=200, description="Model that resolved the issue")
    provider: str = Field(min_length=1, max_length=100, description="Provider of the model")
    environment: SubmitEnvironment | None = None


class SubmitIssueOutput(BaseModel):
    """``created`` (merged or new master). The rejection is an error result rendered by the pack."""

    status: Literal["created"]
    issue_id: str
    master_issue_id: str
    merged: bool
    message: str
    contribution_type: str | None = None


class ConfirmFixInput(_Input):
    issue_id: str = Field(min_length=1, max_length=64, description="The master issue ID (UUID)")
    success: bool = Field(description="Whether the fix resolved the issue")
    environment: dict[str, Any] | None = Field(default=None, description="Environment where fix was applied")
    notes: str | None = Field(default=None, max_length=10_000, description="Optional notes about the fix attempt")
    session_id: str | None = Field(
        default=None, max_length=200, description="AI assistant session identifier for tracking"
    )


class ConfirmFixOutput(BaseModel):
    status: Literal["confirmed"]
    issue_id: str
    updated_confidence: float
    updated_verification_count: int


class ReportUsageInput(_Input):
    event_type: UsageEventType = Field(description="Type of usage event")
    issue_id: str | None = Field(default=None, max_length=64, description="Related issue ID if applicable")
    session_id: str = Field(min_length=1, max_length=200, description="AI assistant session identifier")
    model: str | None = Field(default=None, max_length=200, description="Model making the request")
    provider: str | None = Field(default=None, max_length=100, description="Provider of the model")
    timestamp: AwareDatetime = Field(description="When the event happened (RFC 3339, with a time zone)")


class ReportUsageOutput(BaseModel):
    status: Literal["recorded"]
    event_id: str
