"""The ``sequentialthinking`` tool's input and output, field for field as the reference server names them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

Verdict = Literal["pass", "revise", "reject"]
Outcome = Literal["reviewed", "nothing_to_review", "unscored"]
Score = Annotated[int, Field(ge=0, le=100)]
"""A score as the spec types it: a number, 0-100, never ``null``."""


def _plain_optionals(schema: dict[str, Any]) -> None:
    """Publish optional fields as the reference does (``{"type": "integer"}``, not ``anyOf [..., null]``)."""
    for prop in schema.get("properties", {}).values():
        options = prop.pop("anyOf", None)
        if options is not None:
            kept = [option for option in options if option.get("type") != "null"]
            if len(kept) == 1:
                prop.update(kept[0])
            else:
                prop["anyOf"] = kept
        if prop.get("default", 0) is None:
            del prop["default"]


class ThoughtInput(BaseModel):
    """Arguments of ``sequentialthinking``. Unknown keys are ignored, as the reference server does."""

    model_config = ConfigDict(extra="ignore", json_schema_extra=_plain_optionals)

    thought: str = Field(min_length=1, description="Your current thinking step")
    nextThoughtNeeded: bool = Field(description="Whether another thought step is needed")
    thoughtNumber: int = Field(ge=1, description="Current thought number (numeric value, e.g., 1, 2, 3)")
    totalThoughts: int = Field(ge=1, description="Estimated total thoughts needed (numeric value, e.g., 5, 10)")
    isRevision: bool | None = Field(default=None, description="Whether this revises previous thinking")
    revisesThought: int | None = Field(default=None, ge=1, description="Which thought is being reconsidered")
    branchFromThought: int | None = Field(default=None, ge=1, description="Branching point thought number")
    branchId: str | None = Field(
        default=None, min_length=1, max_length=200, description="Branch identifier (also the audit session id)"
    )
    needsMoreThoughts: bool | None = Field(default=None, description="If more thoughts are needed")


class Dimension(BaseModel):
    name: str
    score: Score


class InlineComment(BaseModel):
    """A comment at a line of the new file. ``severity`` and ``judge`` go beyond the spec's three fields."""

    path: str
    line: int
    comment: str
    severity: str
    judge: str


class Review(BaseModel):
    summary: str
    inline: list[InlineComment] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list)
    """``repo://path:start-end`` (``thought://block-1.py:start-end`` for code written in the thought)."""


class JudgeCard(BaseModel):
    """One judge that scored, and its score. A judge that could not score has no card: it is listed in
    gan.abstained, with the reason."""

    model: str
    score: Score
    notes: str | None = None

    @model_serializer(mode="wrap")
    def _omit_absent_notes(self, handler: SerializerFunctionWrapHandler):
        # No return annotation: pydantic then publishes the model's own schema in serialization mode.
        data = handler(self)
        if isinstance(data, dict) and data.get("notes") is None:
            data.pop("notes", None)
        return data


class Abstention(BaseModel):
    """A judge left out of the verdict (unavailable, failed, timed out), and why."""

    model: str
    reason: str


class GanReview(BaseModel):
    """The audit: the spec's GanReview, whose scores are numbers 0-100 (never null), plus a few fields beyond it.

    outcome says what the numbers stand for:
    - reviewed: overall is the mean of the judges that scored (judge_cards);
    - nothing_to_review: no code in the thought or in the selected scope; overall 100 and verdict pass (nothing
      was found wrong because there was nothing), iterations 0, no judge cards;
    - unscored: there was code but no judge could score it (all in abstained); overall 0 and verdict revise: the
      code is unreviewed, so not approved (and nextThoughtNeeded is forced to true).
    """

    overall: Score
    dimensions: list[Dimension] = Field(default_factory=list)
    verdict: Verdict
    review: Review
    proposed_diff: str | None = None
    iterations: int = 0
    judge_cards: list[JudgeCard] = Field(default_factory=list)
    outcome: Outcome = "reviewed"
    abstained: list[Abstention] = Field(default_factory=list)
    """Judges left out of the verdict, with the reason (they have no card: a card's score is a number)."""
    warnings: list[str] = Field(default_factory=list)
    """Config values that were sanitized, files that could not be read, diffs that were refused..."""
    applied: list[str] | None = None
    """With ``applyFixes``: the files the proposed diff changed in the workspace (``[]`` when refused)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The effective ``SessionConfig`` after sanitizing."""

    @model_serializer(mode="wrap")
    def _omit_absent_applied(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        if isinstance(data, dict) and data.get("applied") is None:
            data.pop("applied", None)
        return data


class ThinkingResult(BaseModel):
    """The response: the reference server's five fields, plus ``sessionId`` and ``gan`` when an audit ran.

    The two audit fields are left out (not ``null``) when there was no audit; the host serializes with
    ``exclude_none`` off, since ``proposed_diff`` is a meaningful ``null`` (the spec's ``string | null``).
    """

    thoughtNumber: int
    totalThoughts: int
    nextThoughtNeeded: bool
    branches: list[str]
    thoughtHistoryLength: int
    sessionId: str | None = None
    gan: GanReview | None = None

    @model_serializer(mode="wrap")
    def _omit_absent_audit(self, handler: SerializerFunctionWrapHandler):
        data = handler(self)
        if isinstance(data, dict):
            for key in ("sessionId", "gan"):
                if data.get(key) is None:
                    data.pop(key, None)
        return data
