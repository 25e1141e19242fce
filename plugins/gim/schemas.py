"""Input and output models of the five GIM tools, matching the API reference (rev 2).

The host derives each tool's ``inputSchema``/``outputSchema`` from these models, so field names, required
fields, enums and defaults here are the contract clients see.

Accommodations for the forms the spec documents' examples send (each still refuses a real error, naming the
field):

* Environment fields at the top level. The system design calls ``gim_search_issues({error_message, language,
  framework})``; the API reference nests them in ``environment``. Both tools that take an ``environment``
  (search, submit) also accept its fields at the top level, published in the input schema as such, and merge
  them into ``environment``. The same field given in both places with different values is a
  ``validation_error`` on the top-level field.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gateway_plugins.gim.models import EnvActionType, FixBundle, ModelInfo, UsageEventType

SearchProvider = Literal["anthropic", "openai", "google", "meta", "mistral", "other"]

_TEXT = 200_000
"""Upper bound of any free-text field (a long stack trace fits; a multi-megabyte paste does not)."""


VERIFICATION_COUNT = (
    "Identities whose confirmation says the fix worked: one vote per identity, a repeat replaces the earlier "
    "vote, and confidence is computed from these votes. The usage statistics' total_resolved counts every "
    "successful confirmation instead, repeats included."
)


_SHORT = 200
"""Upper bound of a name-like field (a language, an OS, a model, a version)."""

_ENVIRONMENT_JSON = 20_000
"""Upper bound of a confirmation's free-form ``environment`` object, as JSON text."""

_FUTURE_SKEW = timedelta(hours=1)
"""How far ahead of this server's clock a reported event may be dated (clocks drift; the future has no events)."""

Code = Annotated[str, StringConstraints(strip_whitespace=False)]
"""Text kept exactly as sent: the indentation and last lines of code, a diff or a program's output matter."""

ShortText = Annotated[str, StringConstraints(max_length=_SHORT)]


def _without_nul(value: Any) -> Any:
    """``value`` (a string, or strings inside lists and objects); refused when one holds U+0000, which no store
    keeps (PostgreSQL text cannot) and no error message or code needs."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("must not contain the NUL character (U+0000)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _without_nul(key)
            _without_nul(item)
    elif isinstance(value, list):
        for item in value:
            _without_nul(item)
    return value


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    @field_validator("*", mode="after")  # after: a nested input model checks its own fields, naming them
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        return _without_nul(value)


def _top_level(name: str) -> Any:
    return Field(
        default=None,
        max_length=200,
        description=f"Same as environment.{name}, for clients that send it at the top level (as the system "
        "design's example does); merged into environment",
    )


class _FlatEnvironment(_Input):
    """An input with an ``environment`` object whose fields may also come at the top level (see the module).

    Subclasses declare the top-level fields after ``environment``, so that it is validated when they are."""

    _environment_model: ClassVar[type[BaseModel]]
    _environment_fields: ClassVar[tuple[str, ...]] = ()

    @field_validator("*", mode="after")
    @classmethod
    def _same_as_nested(cls, value: Any, info: ValidationInfo) -> Any:
        if info.field_name not in cls._environment_fields or value is None:
            return value
        nested = getattr(info.data.get("environment"), info.field_name or "", None)
        if nested is not None and nested != value:
            raise ValueError(f"differs from environment.{info.field_name} ({nested!r}); give it once")
        return value

    @model_validator(mode="after")
    def _merge_into_environment(self) -> Any:
        flat = {name: getattr(self, name) for name in self._environment_fields if getattr(self, name) is not None}
        if flat:
            environment = getattr(self, "environment", None)
            merged = (environment.model_dump(exclude_none=True) if environment is not None else {}) | flat
            self.environment = self._environment_model.model_validate(merged)
            for name in flat:
                setattr(self, name, None)
        return self


class SearchEnvironment(_Input):
    language: ShortText | None = None
    framework: ShortText | None = None
    os: ShortText | None = None


class SearchIssuesInput(_FlatEnvironment):
    _environment_model = SearchEnvironment
    _environment_fields = ("language", "framework", "os")

    error_message: str = Field(min_length=1, max_length=_TEXT, description="The error message or stack trace")
    model: str | None = Field(default=None, max_length=_SHORT, description="Model name (e.g., claude-3-opus-20240229)")
    provider: SearchProvider | None = Field(
        default=None, description="Provider (e.g., anthropic, openai, google, meta, mistral)"
    )
    environment: SearchEnvironment | None = None
    limit: int = Field(default=10, ge=1, le=100, description="Maximum number of results to return")
    offset: int = Field(default=0, ge=0, le=10_000, description="Number of results to skip (offset pagination)")
    language: str | None = _top_level("language")
    framework: str | None = _top_level("framework")
    os: str | None = _top_level("os")


class IssueSummary(BaseModel):
    issue_id: str
    canonical_title: str
    root_cause_category: str
    relevance_score: float
    confidence_score: float
    verification_count: int = Field(description=VERIFICATION_COUNT)
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
    verification_count: int = Field(description=VERIFICATION_COUNT)


class EnvActionInput(_Input):
    order: int | None = Field(default=None, ge=1)
    type: EnvActionType
    command: str = Field(max_length=_TEXT)
    explanation: str = Field(default="", max_length=_TEXT)


class ConstraintsInput(_Input):
    working_versions: dict[ShortText, ShortText] = Field(default_factory=dict, max_length=100)
    incompatible_with: list[ShortText] = Field(default_factory=list, max_length=100)
    required_environment: list[ShortText] = Field(default_factory=list, max_length=100)


class VerificationInput(_Input):
    order: int | None = Field(default=None, ge=1)
    command: str = Field(max_length=_TEXT)
    expected_output: Code = Field(default="", max_length=_TEXT)


class FixBundleInput(_Input):
    env_actions: list[EnvActionInput] = Field(max_length=100)
    constraints: ConstraintsInput | None = None
    verification: list[VerificationInput] = Field(max_length=100)
    code_fix: Code | None = Field(default=None, max_length=_TEXT, description="The corrected code snippet")
    patch_diff: Code | None = Field(default=None, max_length=_TEXT, description="Unified diff of the fix")


class SubmitEnvironment(_Input):
    language: ShortText | None = None
    language_version: ShortText | None = None
    framework: ShortText | None = None
    framework_version: ShortText | None = None
    os: ShortText | None = None


class SubmitIssueInput(_FlatEnvironment):
    _environment_model = SubmitEnvironment
    _environment_fields = ("language", "language_version", "framework", "framework_version", "os")

    error_description: str = Field(
        min_length=1, max_length=_TEXT, description="Clear description of the error (will be sanitized)"
    )
    error_message: str | None = Field(
        default=None, max_length=_TEXT, description="The actual error message or stack trace (will be sanitized)"
    )
    code_snippet: Code | None = Field(
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
    language: str | None = _top_level("language")
    language_version: str | None = _top_level("language_version")
    framework: str | None = _top_level("framework")
    framework_version: str | None = _top_level("framework_version")
    os: str | None = _top_level("os")


class SubmitIssueOutput(BaseModel):
    """An accepted submission (a rejection is an error result, rendered by the pack).

    status is "created" for both outcomes: it is the one success status of the API reference (both revisions),
    whose example response is itself a merged submission ("status": "created", "merged": true). What says
    "merged" is merged, master_issue_id (the existing master it joined) and the message, which names that
    master; issue_id is the stored submission (a child of that master, or the new master itself)."""

    status: Literal["created"] = Field(description="Always created: the submission is stored (see merged)")
    issue_id: str = Field(description="The id of the stored submission: the new master, or the new child")
    master_issue_id: str = Field(description="The master issue it belongs to (its own id when it is a new master)")
    merged: bool = Field(description="True when it was merged into an existing master issue as a child")
    message: str
    contribution_type: str | None = Field(
        default=None,
        description="When merged: what the child adds to the master (environment, symptom, model_quirk, validation)",
    )


class ConfirmFixInput(_Input):
    issue_id: str = Field(min_length=1, max_length=64, description="The master issue ID (UUID)")
    success: bool = Field(description="Whether the fix resolved the issue")
    environment: dict[str, Any] | None = Field(default=None, description="Environment where fix was applied")

    @field_validator("environment")
    @classmethod
    def _environment_fits(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None and len(json.dumps(value, ensure_ascii=False)) > _ENVIRONMENT_JSON:
            raise ValueError(f"at most {_ENVIRONMENT_JSON} characters as JSON")
        return value

    notes: str | None = Field(default=None, max_length=10_000, description="Optional notes about the fix attempt")
    session_id: str | None = Field(
        default=None, max_length=200, description="AI assistant session identifier for tracking"
    )


class ConfirmFixOutput(BaseModel):
    status: Literal["confirmed"]
    issue_id: str
    updated_confidence: float
    updated_verification_count: int = Field(description=VERIFICATION_COUNT)


class ReportUsageInput(_Input):
    event_type: UsageEventType = Field(description="Type of usage event")
    issue_id: str | None = Field(default=None, max_length=64, description="Related issue ID if applicable")
    session_id: str = Field(min_length=1, max_length=200, description="AI assistant session identifier")
    model: str | None = Field(default=None, max_length=200, description="Model making the request")
    provider: str | None = Field(default=None, max_length=100, description="Provider of the model")
    timestamp: AwareDatetime = Field(description="When the event happened (RFC 3339, with a time zone)")

    @field_validator("timestamp")
    @classmethod
    def _representable_in_utc(cls, value: datetime) -> datetime:
        """Events are stored in UTC: ``0001-01-01T00:00:00+10:00`` is a valid RFC 3339 time with no UTC year."""
        try:
            value = value.astimezone(UTC)
        except OverflowError:
            raise ValueError("out of range: the time must fall between years 1 and 9999 in UTC") from None
        if value > datetime.now(UTC) + _FUTURE_SKEW:
            raise ValueError("in the future: give the time the event happened")
        return value


class ReportUsageOutput(BaseModel):
    status: Literal["recorded"]
    event_id: str
