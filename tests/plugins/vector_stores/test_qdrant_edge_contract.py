"""The ``qdrant-edge`` store keeps the vector-store contract, with and without its index built."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.contracts.vector_store_contract import VectorStoreContract
from gateway_plugins.vector_stores.edge import QdrantEdgeConfig, QdrantEdgeStore


class TestQdrantEdgeContract(VectorStoreContract):
    """Default settings: small collections stay in their appendable segment (searched exactly)."""

    @pytest.fixture
    def store_path(self, fast_tmp_path: Path) -> Path:
        return fast_tmp_path / "vector-store"

    def make_store(self, path: Path) -> QdrantEdgeStore:
        return QdrantEdgeStore(path)


class TestQdrantEdgeIndexedContract(VectorStoreContract):
    """Thresholds of 1 KB: every upsert builds HNSW and INT8 quantization, so queries run on indexed, quantized
    segments (rescored with the original vectors) and on filtered HNSW search."""

    @pytest.fixture
    def store_path(self, fast_tmp_path: Path) -> Path:
        return fast_tmp_path / "vector-store"

    def make_store(self, path: Path) -> QdrantEdgeStore:
        config = QdrantEdgeConfig(optimize_threshold_kb=1, indexing_threshold_kb=1, full_scan_threshold_kb=1)
        return QdrantEdgeStore(path, config)
