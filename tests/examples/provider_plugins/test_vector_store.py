"""The example vector store passes the vector-store contract (it keeps nothing once closed)."""

from __future__ import annotations

from pathlib import Path

from example_providers.vector_store import MemoryVectorStore
from gateway.contracts.vector_store_contract import VectorStoreContract


class TestMemoryVectorStoreContract(VectorStoreContract):
    persistent = False

    def make_store(self, path: Path) -> MemoryVectorStore:
        return MemoryVectorStore()
