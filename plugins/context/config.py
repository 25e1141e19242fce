"""``[plugins.context]``: the context pack's configuration.

```toml
[plugins.context]
embed = true                      # dense vectors through the gateway's embedder chain

[[plugins.context.connectors]]    # declared sources (also addable with context.connector_management)
type = "file"
name = "backend"
root = "/srv/repos/backend"

[plugins.context.ranking]         # stage weights; every stage can be switched off (bench/context_eval.py)
dense_weight = 0.3

[plugins.context.search]          # the deployment's search settings (each tenant may change its own: PATCH /config)
max_results = 100
```
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, create_model, model_validator

from gateway.api import CHECK_PROVIDER_OPTIONS, CONNECTOR
from gateway_plugins.context.retrieval.ranker import RankingOptions
from gateway_plugins.context.tenant_policy import TenantConnectorPolicy

__all__ = ["ContextConfig", "DeclaredConnector", "RankingConfig", "SearchSettings"]


def _ranking_model() -> type[BaseModel]:
    defaults = RankingOptions()
    hints = get_type_hints(RankingOptions)
    spec: dict[str, Any] = {f.name: (hints[f.name], getattr(defaults, f.name)) for f in fields(RankingOptions)}
    return create_model("RankingConfig", __config__=ConfigDict(extra="forbid"), **spec)


RankingConfig = _ranking_model()
"""``[plugins.context.ranking]``: the fields of :class:`RankingOptions`, same names and defaults."""


class SearchSettings(BaseModel):
    """Search settings: ``[plugins.context.search]`` gives the deployment's values, and each tenant may change its
    own with ``PATCH /api/v1/config`` (applied at once, kept in the store)."""

    model_config = ConfigDict(extra="forbid")

    max_results: int = Field(
        100, ge=1, le=1000, description="Most results a search ranks (the total that pagination walks through)."
    )
    default_top_k: int = Field(20, ge=1, le=100, description="Results per search (or page) when top_k is not given.")
    enable_reranking: bool = Field(
        True,
        description="Re-rank the fused lexical and dense candidates with the structural signals (definitions, error "
        "messages, test/doc priors, the active file's imports); false ranks by the fused scores alone.",
    )


class DeclaredConnector(BaseModel):
    """A connector declared in config: ``type``, ``name``, the tenant it belongs to, and the type's options."""

    model_config = ConfigDict(extra="allow")

    type: str = Field(min_length=1)
    name: str = Field(min_length=1, max_length=200)
    tenant: str = "default"

    @model_validator(mode="after")
    def _installed_type_and_its_options(self, info: ValidationInfo) -> DeclaredConnector:
        """In a deployment's config: the type is an installed connector and its options are ones it takes."""
        check = (info.context or {}).get(CHECK_PROVIDER_OPTIONS)
        if check is not None:
            check(CONNECTOR, self.type, self.model_extra or {})
        return self


class ContextConfig(BaseModel):
    """``[plugins.context]``."""

    model_config = ConfigDict(extra="forbid")

    connectors: list[DeclaredConnector] = Field(default_factory=list)
    embed: bool = Field(True, description="Embed chunks with the embedder chain (dense retrieval).")
    embed_batch: int = Field(64, ge=1, le=4096, description="Chunks embedded per call.")
    max_embed_chars: int = Field(
        1000, ge=100, le=100_000, description="Characters of a chunk that are embedded (its head: signature, doc)."
    )
    embed_all: bool = Field(
        False, description="Also embed tests, examples and prose (by default they are found lexically only)."
    )
    dense_candidates: int = Field(200, ge=10, le=5000, description="Nearest chunks fetched from the vector store.")
    refresh_seconds: float = Field(1.0, ge=0.0, le=60.0, description="How stale other processes' changes may be.")
    heartbeat_seconds: float = Field(1.0, gt=0.0, le=60.0, description="How often a running job records progress.")
    result_chars: int = Field(4000, ge=200, le=100_000, description="Most characters of one result's content.")
    history_limit: int = Field(20, ge=1, le=500, description="Commits read by context.get_related_info.")
    resources_page: int = Field(500, ge=10, le=10_000, description="Entries per resources/list page.")
    ranking: RankingConfig = Field(default_factory=RankingConfig)  # type: ignore[valid-type]
    search: SearchSettings = Field(default_factory=SearchSettings)
    tenant_connectors: TenantConnectorPolicy = Field(default_factory=TenantConnectorPolicy)
    result_set_seconds: float = Field(
        900.0, ge=10.0, le=86_400.0, description="How long the cursor of a paginated REST search stays valid."
    )

    def ranking_options(self) -> RankingOptions:
        return RankingOptions(**self.ranking.model_dump())
