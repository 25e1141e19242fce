"""Fixtures of the GIM tests: a gateway (real MCP SDK client, in-process) per test on a fresh data dir."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gateway.testing import running_gateway
from tests.plugins.gim.support import gim_config, seed_model_cache


@pytest.fixture(scope="session")
def minilm_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MiniLM ONNX graph, built once per session and shared by every gateway of the tests."""
    from gateway_plugins.embedders.local import LocalEmbedder

    cache = tmp_path_factory.mktemp("minilm")
    LocalEmbedder.load(cache_dir=cache)
    return next(cache.glob("*.onnx"))


@pytest.fixture
def data_dir(tmp_path: Path, minilm_graph: Path) -> Path:
    directory = tmp_path / "data"
    seed_model_cache(directory, minilm_graph)
    return directory


@pytest.fixture
async def gim(data_dir: Path) -> AsyncIterator[Any]:
    """An MCP client connected to a default GIM gateway (hybrid strategy) on an empty data dir."""
    async with running_gateway(gim_config(), data_dir) as client:
        yield client
