"""The example embedder passes the embedder contract."""

from __future__ import annotations

import pytest

from example_providers.embedder import HashingEmbedder
from gateway.api import Embedder
from gateway.contracts.embedder_contract import EmbedderContract


class TestHashingEmbedderContract(EmbedderContract):
    @pytest.fixture
    def embedder(self) -> Embedder:
        return HashingEmbedder(dimension=64)
