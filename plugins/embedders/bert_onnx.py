"""Build an ONNX graph of a BERT sentence encoder (mean pooling + L2 normalisation) from safetensors weights.

The graph reproduces what sentence-transformers computes for ``BertModel`` → ``Pooling(mean)`` → ``Normalize``:
embeddings (word + absolute position + token type 0) → LayerNorm → N post-norm encoder layers (multi-head
self-attention with a padding mask, exact erf GELU) → mask-weighted mean over tokens → L2 normalisation.
Only standard ONNX operators (opset 20) are used, so any ONNX runtime can execute it; onnxruntime fuses them
into its own attention and layer-norm kernels when the session is created.

Inputs: ``input_ids`` and ``attention_mask`` (int64, ``[batch, sequence]``); output: ``sentence_embedding``
(float32, ``[batch, hidden]``, unit length).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

BUILDER_VERSION = 1
"""Bump when the graph changes: cached graphs carry it in their file name."""

OPSET = 20  # Gelu and LayerNormalization are standard operators from here
IR_VERSION = 10  # readable by every onnxruntime that knows opset 20

INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
OUTPUT = "sentence_embedding"


@dataclass(frozen=True)
class BertShape:
    """The architecture numbers of a Hugging Face ``BertModel`` checkpoint (from its ``config.json``)."""

    hidden_size: int
    num_heads: int
    num_layers: int
    max_positions: int
    layer_norm_eps: float

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> BertShape:
        """Read ``config.json``; refuse architectures this graph does not implement."""
        if config.get("model_type") != "bert":
            raise ValueError(f"not a BERT checkpoint (model_type={config.get('model_type')!r})")
        if config.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"unsupported activation {config.get('hidden_act')!r} (only exact gelu)")
        if config.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError("only absolute position embeddings are supported")
        shape = cls(
            hidden_size=int(config["hidden_size"]),
            num_heads=int(config["num_attention_heads"]),
            num_layers=int(config["num_hidden_layers"]),
            max_positions=int(config["max_position_embeddings"]),
            layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)),
        )
        if shape.hidden_size % shape.num_heads:
            raise ValueError("hidden_size is not a multiple of num_attention_heads")
        return shape

    @classmethod
    def from_file(cls, path: Path) -> BertShape:
        return cls.from_config(json.loads(path.read_text(encoding="utf-8")))


class _GraphBuilder:
    """Accumulates nodes and initializers; every helper returns the name of the value it produces."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def const(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, inputs: list[str], name: str, **attributes: Any) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name


def build_sentence_encoder(weights: Mapping[str, np.ndarray], shape: BertShape) -> onnx.ModelProto:
    """The sentence-encoder graph for ``weights`` (a safetensors state dict of a ``BertModel``)."""
    g = _GraphBuilder()
    hidden, heads = shape.hidden_size, shape.num_heads
    head_dim = hidden // heads
    eps = shape.layer_norm_eps

    def w(name: str) -> np.ndarray:
        return np.asarray(weights[name], dtype=np.float32)

    def linear(x: str, prefix: str, out: str) -> str:
        """``x @ W.T + b`` for a torch ``nn.Linear`` stored as ``{prefix}.weight`` / ``{prefix}.bias``."""
        matmul = g.op("MatMul", [x, g.const(f"{out}.w", w(f"{prefix}.weight").T)], f"{out}.matmul")
        return g.op("Add", [matmul, g.const(f"{out}.b", w(f"{prefix}.bias"))], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale, bias = g.const(f"{out}.gamma", w(f"{prefix}.weight")), g.const(f"{out}.beta", w(f"{prefix}.bias"))
        return g.op("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=eps)

    # Embeddings: word + position (0..L-1) + token type 0, then LayerNorm.
    zero, one = g.const("zero_1d", np.array([0], np.int64)), g.const("one_1d", np.array([1], np.int64))
    seq_len = g.op("Shape", [INPUT_IDS], "seq_len", start=1, end=2)
    words = g.op("Gather", [g.const("word_embeddings", w("embeddings.word_embeddings.weight")), INPUT_IDS], "words")
    positions = g.op(
        "Slice",
        [g.const("position_embeddings", w("embeddings.position_embeddings.weight")), zero, seq_len, zero],
        "positions",
    )
    token_type = g.const("token_type_0", w("embeddings.token_type_embeddings.weight")[0])
    summed = g.op("Add", [g.op("Add", [words, positions], "words_positions"), token_type], "embeddings_sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "embeddings")

    # Additive attention mask [batch, 1, 1, seq]: 0 where attended, the most negative float on padding.
    mask_f = g.op("Cast", [ATTENTION_MASK], "mask_f", to=TensorProto.FLOAT)
    inverted = g.op("Sub", [g.const("one_f", np.array(1.0, np.float32)), mask_f], "mask_inverted")
    neg = g.const("mask_min", np.array(np.finfo(np.float32).min, np.float32))
    mask_bias = g.op(
        "Unsqueeze",
        [g.op("Mul", [inverted, neg], "mask_neg"), g.const("axes_1_2", np.array([1, 2], np.int64))],
        "mask_bias",
    )
    split_heads = g.const("split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = g.const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = g.const("attention_scale", np.array(1.0 / np.sqrt(head_dim), np.float32))

    def attention_heads(x: str, prefix: str, out: str) -> str:
        """Project ``x`` and split it into heads: ``[batch, heads, sequence, head_dim]``."""
        reshaped = g.op("Reshape", [linear(x, prefix, out), split_heads], f"{out}.split")
        return g.op("Transpose", [reshaped], f"{out}.heads", perm=[0, 2, 1, 3])

    for i in range(shape.num_layers):
        p, n = f"encoder.layer.{i}", f"layer{i}"
        q, k, v = (
            attention_heads(x, f"{p}.attention.self.{kind}", f"{n}.{kind}") for kind in ("query", "key", "value")
        )
        k_t = g.op("Transpose", [k], f"{n}.key.t", perm=[0, 1, 3, 2])
        scores = g.op("Mul", [g.op("MatMul", [q, k_t], f"{n}.qk"), scale], f"{n}.scores")
        probs = g.op("Softmax", [g.op("Add", [scores, mask_bias], f"{n}.masked")], f"{n}.probs", axis=-1)
        context = g.op(
            "Transpose", [g.op("MatMul", [probs, v], f"{n}.context.heads")], f"{n}.context.t", perm=[0, 2, 1, 3]
        )
        context = g.op("Reshape", [context, merge_heads], f"{n}.context")
        attended = linear(context, f"{p}.attention.output.dense", f"{n}.attention_out")
        x = layer_norm(
            g.op("Add", [attended, x], f"{n}.attention_residual"), f"{p}.attention.output.LayerNorm", f"{n}.ln1"
        )
        inner = g.op("Gelu", [linear(x, f"{p}.intermediate.dense", f"{n}.intermediate")], f"{n}.gelu")
        out = linear(inner, f"{p}.output.dense", f"{n}.output")
        x = layer_norm(g.op("Add", [out, x], f"{n}.output_residual"), f"{p}.output.LayerNorm", f"{n}.ln2")

    # Mean pooling over attended tokens (denominator clamped at 1e-9, as sentence-transformers), then L2.
    mask_3d = g.op("Unsqueeze", [mask_f, g.const("axes_2", np.array([2], np.int64))], "mask_3d")
    token_sum = g.op("ReduceSum", [g.op("Mul", [x, mask_3d], "masked_tokens"), one], "token_sum", keepdims=0)
    token_count = g.op(
        "Clip",
        [
            g.op("ReduceSum", [mask_3d, one], "token_count_raw", keepdims=0),
            g.const("min_count", np.array(1e-9, np.float32)),
        ],
        "token_count",
    )
    pooled = g.op("Div", [token_sum, token_count], "mean_pooled")
    g.op("LpNormalization", [pooled], OUTPUT, axis=-1, p=2)

    graph = helper.make_graph(
        g.nodes,
        "bert_sentence_encoder",
        [
            helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "sequence"]),
            helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "sequence"]),
        ],
        [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", hidden])],
        g.initializers,
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", OPSET)],
        ir_version=IR_VERSION,
        producer_name="mcp-gateway",
        producer_version=str(BUILDER_VERSION),
    )
    onnx.checker.check_model(model)
    return model
