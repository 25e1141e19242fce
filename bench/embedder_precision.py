"""How close the local embedder's int8 vectors are to the exact (fp32) ones, on this machine's CPU.

    python bench/embedder_precision.py [--texts 400] [--eval /work/shared/eval/errors_dev.jsonl]

Embeds the first ``--texts`` texts of the evaluation split (each cluster's reports and root cause) three ways:
fp32 (exact), the shipped int8 graph (7-bit weights, ``reduce_range``: no CPU saturates its integer sums) and the
full-range int8 graph it replaced (whose sums saturate on x86 CPUs without VNNI, so its vectors depend on the CPU).
Prints each int8 variant's cosine to the fp32 vector of the same text, and how far the similarity of two texts (what
GIM's thresholds compare) moves from fp32's.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import onnx

from gateway_plugins.embedders import local
from gateway_plugins.embedders.config import LocalEmbedderConfig


def _full_range(model: onnx.ModelProto) -> onnx.ModelProto:
    """The quantization before 7-bit weights: the same, with all 8 bits."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as directory, local._quiet_quantizer():
        target = Path(directory) / "model.onnx"
        quantize_dynamic(model, target, op_types_to_quantize=["MatMul"], per_channel=True, weight_type=QuantType.QInt8)
        return onnx.load(str(target))


def _vectors(texts: list[str], precision: str, *, full_range: bool = False) -> np.ndarray:
    shipped = local._quantized
    if full_range:
        local._quantized = _full_range  # a bench-only swap, before the graph is built (no cache dir: built afresh)
    try:
        embedder = local.LocalEmbedder.load(LocalEmbedderConfig(precision=precision), cache_dir=None)  # type: ignore[arg-type]
    finally:
        local._quantized = shipped
    vectors = np.asarray(embedder.embed_sync(texts), dtype=np.float64)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument(
        "--eval", type=Path, default=Path(__file__).resolve().parents[2] / "shared/eval/errors_dev.jsonl"
    )
    args = parser.parse_args()
    texts: list[str] = []
    for line in args.eval.read_text().splitlines():
        cluster = json.loads(line)
        texts += [report["error_message"] for report in cluster["reports"]] + [cluster["root_cause"]]
    texts = texts[: args.texts]
    exact = _vectors(texts, "fp32")
    pairs = exact @ exact.T
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    vnni = "avx512_vnni" in flags or "avx_vnni" in flags
    print(f"{len(texts)} texts; this CPU {'has' if vnni else 'lacks'} VNNI")
    print(
        f"{'variant':<28} {'cosine to fp32 min':>19} {'mean':>7} {'|similarity - fp32| mean':>25} {'p99':>6} {'max':>6}"
    )
    for name, vectors in (
        ("int8, 7-bit weights (ships)", _vectors(texts, "int8")),
        ("int8, full range (before)", _vectors(texts, "int8", full_range=True)),
    ):
        cosine = (exact * vectors).sum(axis=1)
        moved = np.abs(pairs - vectors @ vectors.T)
        print(
            f"{name:<28} {cosine.min():>19.4f} {cosine.mean():>7.4f} {moved.mean():>25.4f}"
            f" {np.percentile(moved, 99):>6.4f} {moved.max():>6.4f}"
        )


if __name__ == "__main__":
    main()
