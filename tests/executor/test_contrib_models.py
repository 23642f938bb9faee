"""What onnxruntime's tools write, run by xocview and by onnxruntime on the same seeded feeds:
tiny BERT, GPT-2 and torch TransformerEncoder exports rewritten by onnxruntime's transformer
optimizer, and a CNN rewritten by onnxruntime's own level-2 optimizer (files made by
tests/data/contrib/make_transformer_models.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.executor.contrib_reference import assert_same, ort_outputs, our_outputs

DATA = Path(__file__).parent.parent / "data" / "contrib"
VOCAB, SEQ = 40, 8

# file -> the com.microsoft (and onnxruntime-defined ai.onnx) ops the tool wrote in it
EXPECTED_OPS = {
    "bert_optimized.onnx": {
        "EmbedLayerNormalization",
        "Attention",
        "SkipLayerNormalization",
        "BiasGelu",
    },
    "bert_fast_gelu.onnx": {
        "EmbedLayerNormalization",
        "Attention",
        "SkipLayerNormalization",
        "FastGelu",
    },
    "bert_mha.onnx": {
        "EmbedLayerNormalization",
        "MultiHeadAttention",
        "SkipLayerNormalization",
        "BiasGelu",
    },
    "bert_no_embed.onnx": {"Attention", "BiasGelu", "LayerNormalization"},
    "gpt2_optimized.onnx": {"SkipLayerNormalization", "FastGelu", "LayerNormalization"},
    "encoder_optimized.onnx": {"SkipLayerNormalization"},
    "ort_level2_fused.onnx": {"FusedConv", "FusedMatMul", "QuickGelu"},
}


def _feeds(model: onnx.ModelProto, seed: int) -> dict[str, np.ndarray]:
    """Seeded inputs: token ids in the vocabulary, a padding mask with short rows, float data."""
    rng = np.random.default_rng(seed)
    feeds: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        kind = value.type.tensor_type.elem_type
        name = value.name
        if name == "x":
            rank = len(value.type.tensor_type.shape.dim)
            shape = (2, SEQ, 16) if rank == 3 else (1, 3, 6, 6)
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(kind)
        if name == "attention_mask":
            mask = np.ones((2, SEQ), dtype)
            mask[0, 5:] = 0  # a padded row
            feeds[name] = mask
        elif name == "token_type_ids":
            feeds[name] = (np.arange(SEQ) >= SEQ // 2).astype(dtype)[None].repeat(2, 0)
        else:
            feeds[name] = rng.integers(0, VOCAB, (2, SEQ)).astype(dtype)
    return feeds


@pytest.mark.parametrize("name", sorted(EXPECTED_OPS))
@pytest.mark.parametrize("seed", [0, 1])
def test_optimized_models_match_onnxruntime(name: str, seed: int) -> None:
    path = DATA / name
    model = onnx.load(str(path))
    fused = {n.op_type for n in model.graph.node}
    assert EXPECTED_OPS[name] <= fused, f"{name}: the tool wrote {sorted(fused)}"
    feeds = _feeds(model, seed)
    assert_same(our_outputs(path, feeds), ort_outputs(path, feeds))


def test_the_files_stay_small() -> None:
    sizes = {p.name: p.stat().st_size for p in DATA.glob("*.onnx")}
    assert set(sizes) == set(EXPECTED_OPS)
    assert max(sizes.values()) < 200_000
