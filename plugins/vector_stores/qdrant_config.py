"""Configuration of the ``qdrant`` store and what it sends to Qdrant: collection settings, filters, search params."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator
from qdrant_client import models

from gateway.api import FilterCondition, Secret
from gateway.api.vectors import FieldType
from gateway_plugins.vector_stores.common import IndexSettings

DEFAULT_URL = "http://localhost:6333"

SCHEMA: Mapping[str, models.PayloadSchemaType] = {
    "keyword": models.PayloadSchemaType.KEYWORD,
    "integer": models.PayloadSchemaType.INTEGER,
    "float": models.PayloadSchemaType.FLOAT,
    "bool": models.PayloadSchemaType.BOOL,
    "datetime": models.PayloadSchemaType.DATETIME,
}


class QdrantConfig(IndexSettings):
    """``[plugins.vector_store.qdrant]``: a Qdrant server or cluster (``url``), or qdrant-client's local mode
    (``location = ":memory:"`` or ``path``, for tests and single-process use; it searches by brute force)."""

    url: str | None = Field(None, description=f"Server URL (default {DEFAULT_URL} when no location/path).")
    api_key: Secret = Field(None, description='API key, written { env = "QDRANT_API_KEY" }.')
    timeout: int = Field(10, ge=1, le=600, description="Seconds before a request to the server gives up.")
    prefer_grpc: bool = Field(False, description="Talk gRPC (port grpc_port) instead of REST.")
    grpc_port: int = Field(6334, ge=1, le=65535)
    location: str | None = Field(None, description='":memory:" for an in-process, throw-away store.')
    path: Path | None = Field(None, description="Local mode on disk (relative paths: under the provider data dir).")
    collection_prefix: str = Field(
        "", max_length=64, description="Prefix of this gateway's collections on a shared server."
    )
    shard_number: int | None = Field(None, ge=1, description="Shards of a new collection (cluster).")
    replication_factor: int | None = Field(None, ge=1, description="Replicas of a new collection (cluster).")
    check_compatibility: bool = Field(True, description="Compare client and server versions at start.")

    @model_validator(mode="after")
    def _one_target(self) -> QdrantConfig:
        given = [k for k in ("url", "location", "path") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"set only one of url, location and path (got {', '.join(given)})")
        if self.location is not None and self.location != ":memory:":
            raise ValueError('location is ":memory:" (for a server use url, for local files use path)')
        if self.collection_prefix and not all(c.isalnum() or c in "_-." for c in self.collection_prefix):
            raise ValueError("collection_prefix holds letters, digits, '_', '-' and '.' only")
        return self

    @property
    def local(self) -> bool:
        return self.location is not None or self.path is not None

    def target(self) -> str:
        """Where the store lives, for messages (never includes the key)."""
        if self.location is not None:
            return "local in-memory Qdrant"
        if self.path is not None:
            return f"local Qdrant at {self.path}"
        return f"the Qdrant server at {self.url or DEFAULT_URL}"


def collection_settings(config: QdrantConfig, dimension: int) -> dict[str, Any]:
    """Keyword arguments of ``create_collection`` for a collection of ``dimension``-sized cosine vectors."""
    settings: dict[str, Any] = {
        "vectors_config": models.VectorParams(
            size=dimension, distance=models.Distance.COSINE, on_disk=config.vectors_on_disk
        ),
        "hnsw_config": models.HnswConfigDiff(
            m=config.hnsw_m,
            ef_construct=config.hnsw_ef_construct,
            full_scan_threshold=config.full_scan_threshold_kb,
            on_disk=config.hnsw_on_disk,
        ),
        "on_disk_payload": config.payload_on_disk,
        "shard_number": config.shard_number,
        "replication_factor": config.replication_factor,
    }
    if config.quantization:
        settings["quantization_config"] = models.ScalarQuantization(
            scalar=models.ScalarQuantizationConfig(
                type=models.ScalarType.INT8, quantile=config.quantile, always_ram=config.quantized_in_ram
            )
        )
    return settings


def search_params(config: QdrantConfig) -> models.SearchParams:
    quantization = None
    if config.quantization:
        quantization = models.QuantizationSearchParams(rescore=config.rescore, oversampling=config.oversampling)
    return models.SearchParams(hnsw_ef=config.hnsw_ef, quantization=quantization)


def schema_of(field: str, kind: FieldType) -> models.PayloadSchemaType:
    try:
        return SCHEMA[kind]
    except KeyError:
        raise ValueError(f"unknown payload index type {kind!r} for field {field!r}") from None


def qdrant_filter(conditions: Sequence[FilterCondition]) -> models.Filter | None:
    if not conditions:
        return None
    return models.Filter(must=[_condition(c) for c in conditions])


def _condition(condition: FilterCondition) -> models.FilterCondition:
    key, values = condition.key, condition.values
    if len(values) == 1:
        return _equals(key, values[0])
    if all(isinstance(v, str) for v in values) or all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))  # also [] (matches nothing)
    return models.Filter(should=[_equals(key, v) for v in values])


def _equals(key: str, value: Any) -> models.FieldCondition:
    if isinstance(value, float):
        return models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))
