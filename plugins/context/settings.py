"""``GET /config`` and ``PATCH /config``: the settings a tenant reads and the ones it may change.

Two kinds of setting:

* **search** (``search.max_results``, ``search.default_top_k``, ``search.enable_reranking``): per tenant, changeable
  at run time. ``[plugins.context.search]`` gives the deployment's values; a tenant's ``PATCH`` stores its own in
  the relational store (table ``ctx_settings``), so every replica applies them to that tenant's next search, MCP
  and REST alike; ``null`` goes back to the deployment's value. No other tenant is affected.
* **indexing** (``indexing.batch_size``, ``indexing.embed``): the deployment's ``[plugins.context]`` values
  (``embed_batch``, ``embed``), shared by every tenant, shown read-only: ``PATCH`` refuses them as unknown fields
  (one tenant must not change what every tenant runs on). Changing them is an edit of the config file and a
  restart.

So no key ``PATCH`` accepts needs a restart today, and ``requires_restart`` is ``false``; it is part of the answer
so that a future setting that only applies at start can say so.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

from gateway_plugins.context.config import SearchSettings

if TYPE_CHECKING:
    from gateway_plugins.context.service import ContextService

__all__ = ["ConfigPatch", "ConfigUpdated", "ConfigView", "patch_config", "read_config", "search_settings"]

RESTART_KEYS: frozenset[str] = frozenset()
"""Settings that take effect only after a restart (none of the ones ``PATCH`` accepts)."""


class IndexingSettings(BaseModel):
    batch_size: int = Field(description="Chunks embedded per call ([plugins.context] embed_batch; read-only)")
    embed: bool = Field(description="Whether chunks are embedded for dense retrieval ([plugins.context] embed)")


class ConfigView(BaseModel):
    search: SearchSettings = Field(description="The caller's tenant's search settings (changeable with PATCH)")
    indexing: IndexingSettings = Field(description="The deployment's indexing settings (read-only)")


class SearchPatch(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    max_results: int | None = Field(None, ge=1, le=1000, description="null: back to the deployment's value")
    default_top_k: int | None = Field(None, ge=1, le=100, description="null: back to the deployment's value")
    enable_reranking: bool | None = Field(None, description="null: back to the deployment's value")


class ConfigPatch(BaseModel):
    """The settings to change (a JSON merge patch of ``GET /config``: absent keys stay, ``null`` resets)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    search: SearchPatch | None = None


class ConfigUpdated(BaseModel):
    updated: list[str] = Field(description="The dotted names of the settings the patch set or reset")
    requires_restart: bool = Field(description="Whether any of them takes effect only after a restart")


async def search_settings(service: ContextService, tenant: str) -> SearchSettings:
    """``tenant``'s search settings: the deployment's, with the tenant's own changes."""
    stored = await service.repo.settings_of(service.store, tenant)
    own = {name.split(".", 1)[1]: value for name, value in stored.items() if name.startswith("search.")}
    return service.config.search.model_copy(update={k: v for k, v in own.items() if k in SearchSettings.model_fields})


async def read_config(service: ContextService, tenant: str) -> ConfigView:
    return ConfigView(
        search=await search_settings(service, tenant),
        indexing=IndexingSettings(batch_size=service.config.embed_batch, embed=service.config.embed),
    )


async def patch_config(service: ContextService, tenant: str, patch: ConfigPatch) -> ConfigUpdated:
    changes = {}
    if patch.search is not None:
        changes = {f"search.{name}": getattr(patch.search, name) for name in sorted(patch.search.model_fields_set)}
    if changes:
        async with service.store.transaction() as tx:
            await service.repo.save_settings(tx, tenant, changes, datetime.now(UTC))
    return ConfigUpdated(updated=list(changes), requires_restart=bool(RESTART_KEYS & set(changes)))
