"""The vector_stores plugin registers its two providers through the entry point, like any third-party plugin, and
the gateway builds the default one in its data dir."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from gateway.api import VECTOR_STORE, ProviderContext, VectorPoint, VectorStore
from gateway.app import running_runtime
from gateway.plugin_manager import create_plugin_manager
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig, QdrantEdgeStore
from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore
from gateway_plugins.vector_stores.qdrant import QdrantStore
from gateway_plugins.vector_stores.qdrant_config import QdrantConfig


def test_both_stores_are_registered_with_their_config_models() -> None:
    registry = create_plugin_manager().registry
    edge = registry.provider(VECTOR_STORE, "qdrant-edge")
    server = registry.provider(VECTOR_STORE, "qdrant")
    assert edge.plugin == server.plugin == "vector_stores"
    assert edge.config_model is QdrantEdgeConfig and server.config_model is QdrantConfig
    assert edge.description and server.description


def test_the_factories_build_stores_from_their_tables(fast_tmp_path: Path) -> None:
    registry = create_plugin_manager().registry

    def build(name: str, table: dict[str, object]) -> VectorStore:
        reg = registry.provider(VECTOR_STORE, name)
        config = reg.config_model.model_validate(table) if reg.config_model else None
        return reg.factory(ProviderContext(VECTOR_STORE, name, config, fast_tmp_path / name, lambda *a: None))

    edge = build("qdrant-edge", {"hnsw_m": 8, "optimize_threshold_kb": 0})
    server = build("qdrant", {"location": ":memory:"})
    assert isinstance(edge, SharedEdgeStore) and edge.config.hnsw_m == 8 and edge.is_owner
    assert isinstance(server, QdrantStore)
    for store in (edge, server):
        assert isinstance(store, VectorStore)
        anyio.run(store.close)


@pytest.mark.anyio
async def test_the_default_gateway_builds_qdrant_edge_in_its_data_dir_and_closes_it(fast_tmp_path: Path) -> None:
    config = {"gateway": {"data_dir": str(fast_tmp_path)}}
    async with running_runtime(config, configure_logs=False) as runtime:
        store = runtime.providers.get(VECTOR_STORE)
        assert isinstance(store, SharedEdgeStore) and store.is_owner
        assert store.directory == fast_tmp_path / "providers" / "vector_store" / "qdrant-edge"
        await store.ensure_collection("c", dimension=2)
        await store.upsert("c", [VectorPoint("1b4e28ba-2fa1-11d2-883f-0016d3cca427", [0.6, 0.8])])
    reopened = QdrantEdgeStore(fast_tmp_path / "providers" / "vector_store" / "qdrant-edge")  # the lock was released
    try:
        assert await reopened.count("c") == 1
    finally:
        await reopened.close()
