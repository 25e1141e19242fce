"""``[plugins.thinking]``: the thinking pack's configuration."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gateway_plugins.thinking.session_config import SessionConfig

AUDIT_ENV = "ENABLE_GAN_AUDITING"
LOGGING_ENV = "DISABLE_THOUGHT_LOGGING"


class HistoryLimits(BaseModel):
    """Bounds of the in-memory thought histories (one per caller identity)."""

    model_config = ConfigDict(extra="forbid")

    max_thoughts: int = Field(default=1000, ge=1, le=100_000)
    """Thoughts kept per history (and per branch); the oldest go first. ``thoughtHistoryLength`` counts the kept."""
    max_branches: int = Field(default=100, ge=1, le=10_000)
    """Branches kept per history; the least recently used goes first."""
    max_histories: int = Field(default=1000, ge=1, le=1_000_000)
    """Caller identities (and audit sessions) kept; the least recently used goes first."""
    ttl_seconds: float = Field(default=3600.0, gt=0)
    """A history (or audit session) idle for this long is forgotten."""


class ContextLimits(BaseModel):
    """Bounds of what an audit reads from the workspace."""

    model_config = ConfigDict(extra="forbid")

    max_file_bytes: int = Field(default=200_000, ge=1_000)
    """Larger files are reviewed by their beginning only (and never patched)."""
    max_total_bytes: int = Field(default=1_000_000, ge=10_000)
    max_files: int = Field(default=50, ge=1, le=10_000)
    max_tree_entries: int = Field(default=400, ge=10, le=100_000)
    git_timeout_seconds: float = Field(default=20.0, gt=0, le=600)


class ThinkingConfig(BaseModel):
    """``[plugins.thinking]``. Auditing is on when ``audit = true`` or ``ENABLE_GAN_AUDITING=true``."""

    model_config = ConfigDict(extra="forbid")

    audit: bool = False
    workspace_root: Path | None = None
    """The repository audits read (and, with ``applyFixes``, patch). Default: the working directory at start-up;
    a relative path is taken from there too."""
    max_thought_chars: int = Field(default=100_000, ge=100, le=10_000_000)
    history: HistoryLimits = Field(default_factory=HistoryLimits)
    limits: ContextLimits = Field(default_factory=ContextLimits)
    defaults: SessionConfig = Field(default_factory=SessionConfig)
    """The ``SessionConfig`` a thought's inline ``gan-config`` block starts from."""
    allowed_judges: tuple[str, ...] = ("internal", "gemini")
    """Judges a ``gan-config`` block may name (judge providers are looked up by these names)."""
    reject_margin: int = Field(default=30, ge=0, le=100)
    """``reject`` when the overall score is this far or more below the threshold."""
    max_comments: int = Field(default=50, ge=1, le=1000)
    judge_timeout_seconds: float = Field(default=120.0, gt=0, le=3600)
    """A judge that has not answered by then is left out of the verdict."""

    @model_validator(mode="after")
    def _defaults_use_allowed_judges(self) -> ThinkingConfig:
        unknown = [name for name in self.defaults.judges if name not in self.allowed_judges]
        if unknown:
            raise ValueError(f"defaults.judges names {', '.join(unknown)}, which allowed_judges does not list")
        return self

    def auditing(self) -> bool:
        return self.audit or os.environ.get(AUDIT_ENV, "").strip().lower() == "true"

    def resolved_root(self) -> Path:
        root = self.workspace_root or Path.cwd()
        return (Path.cwd() / root.expanduser()).resolve()
