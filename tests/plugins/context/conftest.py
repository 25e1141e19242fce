"""Fixtures of the context tests: the MiniLM graph built once per session, a sample repository per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.context.support import sample_repo


@pytest.fixture(scope="session")
def minilm_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from gateway_plugins.embedders.local import LocalEmbedder

    cache = tmp_path_factory.mktemp("minilm")
    LocalEmbedder.load(cache_dir=cache)
    return next(cache.glob("*.onnx"))


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def embed_data_dir(tmp_path: Path, minilm_graph: Path) -> Path:
    from tests.plugins.gim.support import seed_model_cache

    directory = tmp_path / "data"
    seed_model_cache(directory, minilm_graph)
    return directory


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return sample_repo(tmp_path / "shop")
