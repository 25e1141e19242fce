"""Configuration models of the built-in embedders (light: importing them loads no model or SDK)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gateway.api import Secret

Precision = Literal["int8", "fp32"]
"""How the local model computes: ``int8`` (quantized weights, the default) or ``fp32`` (exact)."""

GEMINI_MAX_BATCH = 100
"""``batchEmbedContents`` accepts at most 100 requests."""


class LocalEmbedderConfig(BaseModel):
    """``[plugins.embedder.local]``."""

    model_config = ConfigDict(extra="forbid")

    max_length: int = Field(256, ge=8, le=512, description="Tokens per input, [CLS]/[SEP] included; longer is cut.")
    threads: int | None = Field(
        None, ge=1, le=256, description="Forward passes run at once, one core each (default: all cores)."
    )
    batch_size: int = Field(
        32, ge=1, le=1024, description="Texts per call (and per forward pass with fp32; int8 passes hold one text)."
    )
    precision: Precision = Field(
        "int8",
        description="int8: the weight matrices quantized per output channel, activations quantized on the fly "
        "(about half fp32's CPU time per text; cosine to the fp32 vectors 0.98-0.999 on real error reports); "
        "fp32: the exact sentence-transformers vectors. The two are different embedders (their ids differ): "
        "after switching, `gateway reindex --missing` embeds the stored items.",
    )


NO_KEY = 'no API key: set GEMINI_API_KEY (api_key = { env = "GEMINI_API_KEY" })'
"""Why the Gemini embedder is left out of a chain when no key is configured."""


class GeminiEmbedderConfig(BaseModel):
    """``[plugins.embedder.gemini]``."""

    model_config = ConfigDict(extra="forbid")

    api_key: Secret = Field(
        {"env": "GEMINI_API_KEY"},
        validate_default=True,
        description='The Gemini API key (default { env = "GEMINI_API_KEY" }: set the variable and the link serves).',
    )
    model: str = Field("gemini-embedding-001", min_length=1)
    output_dimensionality: int = Field(3072, ge=1, le=3072)
    base_url: str | None = Field(None, description="Another endpoint for the Gemini REST API (proxies, tests).")
    timeout_seconds: float = Field(10.0, gt=0, le=600, description="Hard limit on one request.")
    max_retries: int = Field(3, ge=0, le=10, description="Retries after the first attempt (429, 5xx, timeouts).")
    batch_size: int = Field(GEMINI_MAX_BATCH, ge=1, le=GEMINI_MAX_BATCH)
    max_input_chars: int = Field(6000, ge=1, description="Longer texts are cut (the model reads 2048 tokens).")
    retry_initial_backoff_seconds: float = Field(0.5, ge=0)
    retry_max_backoff_seconds: float = Field(8.0, ge=0)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        return value
