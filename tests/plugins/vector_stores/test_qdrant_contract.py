"""The ``qdrant`` store keeps the vector-store contract, on qdrant-client's local mode (the same code path as a
server: the same client API, models and error handling; the local engine ignores index settings)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.contracts.vector_store_contract import VectorStoreContract
from gateway_plugins.vector_stores.qdrant import QdrantStore
from gateway_plugins.vector_stores.qdrant_config import QdrantConfig

pytestmark = [
    pytest.mark.filterwarnings("ignore:Payload indexes have no effect in the local Qdrant:UserWarning"),
    pytest.mark.filterwarnings("ignore:Local mode performs exact:UserWarning"),
]


class TestQdrantLocalFilesContract(VectorStoreContract):
    @pytest.fixture
    def store_path(self, fast_tmp_path: Path) -> Path:
        return fast_tmp_path / "vector-store"

    def make_store(self, path: Path) -> QdrantStore:
        return QdrantStore(QdrantConfig(path=path))


class TestQdrantInMemoryContract(VectorStoreContract):
    persistent = False

    def make_store(self, path: Path) -> QdrantStore:
        return QdrantStore(QdrantConfig(location=":memory:"))


class TestQdrantWithPrefixContract(VectorStoreContract):
    """A ``collection_prefix`` (gateways sharing a server) is invisible to the caller."""

    @pytest.fixture
    def store_path(self, fast_tmp_path: Path) -> Path:
        return fast_tmp_path / "vector-store"

    def make_store(self, path: Path) -> QdrantStore:
        return QdrantStore(QdrantConfig(path=path, collection_prefix="gw1_"))
