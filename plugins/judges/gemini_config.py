"""``[plugins.judge.gemini]``: kept apart from the judge so that registering it does not import the Gemini SDK."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.api import Secret


class GeminiJudgeConfig(BaseModel):
    """``[plugins.judge.gemini]``."""

    model_config = ConfigDict(extra="forbid")

    api_key: Secret = Field(default={"env": "GEMINI_API_KEY"}, validate_default=True)
    base_url: str | None = None
    """Another endpoint speaking the Gemini REST API (a proxy, or the test fake)."""
    model: str = "gemini-2.5-flash"
    timeout_seconds: float = Field(default=60.0, gt=0, le=600)
    retries: int = Field(default=1, ge=0, le=5)
    """Extra attempts on 408/429/5xx, with exponential back-off, all within ``timeout_seconds``."""
    temperature: float = Field(default=0.0, ge=0, le=2)
    max_prompt_chars: int = Field(default=120_000, ge=1_000, le=2_000_000)
    redact_with: str | None = "patterns"
    """The sanitizer layer that redacts secrets before code is sent; ``""`` sends code as it is."""

    @field_validator("redact_with")
    @classmethod
    def _empty_disables(cls, value: str | None) -> str | None:
        return value or None
