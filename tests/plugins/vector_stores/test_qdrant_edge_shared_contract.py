"""A ``qdrant-edge`` store reached through its owner's socket keeps the vector-store contract: every call of the
suite travels over the real Unix socket to another store's server thread and back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gateway.contracts.vector_store_contract import VectorStoreContract
from gateway_plugins.vector_stores.edge_shared import SharedEdgeStore


class TestSharedEdgeClientContract(VectorStoreContract):
    """The owner is another :class:`SharedEdgeStore` on the same directory (its lock makes the store under test a
    client, exactly as a second process would be); it stays open across the client's close and reopen."""

    @pytest.fixture
    def store_path(self, fast_tmp_path: Path) -> Path:
        return fast_tmp_path / "vector-store"

    @pytest.fixture(autouse=True)
    async def owners(self) -> AsyncIterator[None]:
        self._owners: dict[Path, SharedEdgeStore] = {}
        yield
        for owner in self._owners.values():
            await owner.close()

    def make_store(self, path: Path) -> SharedEdgeStore:
        if path not in self._owners:
            self._owners[path] = SharedEdgeStore(path)
            assert self._owners[path].is_owner
        client = SharedEdgeStore(path)
        assert not client.is_owner
        return client
