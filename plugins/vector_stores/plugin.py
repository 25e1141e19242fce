"""Entry point of the built-in vector_stores plugin: the ``qdrant-edge`` (embedded, default) and ``qdrant``
(server or cluster) vector stores."""

from __future__ import annotations

from gateway.api import VECTOR_STORE, ProviderRegistrar, hookimpl
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig
from gateway_plugins.vector_stores.edge_shared import create_qdrant_edge_store
from gateway_plugins.vector_stores.qdrant import create_qdrant_store
from gateway_plugins.vector_stores.qdrant_config import QdrantConfig


@hookimpl
def gateway_register_providers(register: ProviderRegistrar) -> None:
    register(
        VECTOR_STORE,
        "qdrant-edge",
        create_qdrant_edge_store,
        config_model=QdrantEdgeConfig,
        description="Qdrant Edge in-process, files in the data dir (HNSW, INT8 quantization); other processes on the "
        "same data dir use it through the process that opened it",
    )
    register(
        VECTOR_STORE,
        "qdrant",
        create_qdrant_store,
        config_model=QdrantConfig,
        description="A Qdrant server or cluster through qdrant-client (shared by several gateways)",
    )
