"""Attention and RotaryEmbedding kernels against onnxruntime."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours
from xocview.executor.registry import lookup

RNG = np.random.default_rng(23)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"is_causal": 1},
        {"scale": 0.1},
        {"softcap": 2.0, "qk_matmul_output_mode": 0},
        {"softcap": 2.0, "qk_matmul_output_mode": 1},
        {"qk_matmul_output_mode": 2},  # onnxruntime writes -FLT_MAX for -inf
        {"qk_matmul_output_mode": 3, "softmax_precision": 11},
    ],
)
@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (4, 1)])
def test_attention_4d(attrs: dict[str, Any], heads: tuple[int, int]) -> None:
    hq, hkv = heads
    q, k, v = rand(2, hq, 3, 8), rand(2, hkv, 5, 8), rand(2, hkv, 5, 6)
    mask = rand(3, 7)  # past 2 + 5 keys
    past_k, past_v = rand(2, hkv, 2, 8), rand(2, hkv, 2, 6)
    check_op("Attention", [q, k, v, mask, past_k, past_v], attrs, opset=23, num_outputs=4)


@pytest.mark.parametrize("mask_shape", [(3, 7), (1, 3, 7), (2, 1, 3, 7), (6, 3, 7)])
@pytest.mark.parametrize("causal", [0, 1])
def test_attention_3d_gqa_masks(mask_shape: tuple[int, ...], causal: int) -> None:
    """3-D inputs with q_num_heads/kv_num_heads; bool masks broadcast and pad with False."""
    q, k, v = rand(2, 3, 6 * 4), rand(2, 5, 2 * 4), rand(2, 5, 2 * 3)
    mask = RNG.random(mask_shape) > 0.3
    mask[..., 0] = True  # keep a key in every row: onnxruntime gives NaN for an empty row
    attrs = {"q_num_heads": 6, "kv_num_heads": 2, "is_causal": causal}
    past_k, past_v = rand(2, 2, 2, 4), rand(2, 2, 2, 3)
    check_op("Attention", [q, k, v, mask, past_k, past_v], attrs, opset=23, num_outputs=3)


def test_attention_float16() -> None:
    q, k, v = (rand(1, 2, 4, 8, dtype=np.float16) for _ in range(3))
    check_op("Attention", [q, k, v], {"is_causal": 1}, opset=23, rtol=2e-3, atol=2e-3)


def test_attention_nonpad_kv_seqlen() -> None:
    """Opset 24: keys past nonpad_kv_seqlen[b] are padding, and causal masking is offset by
    nonpad_kv_seqlen[b] - Sq: the same as a past cache of that length (opset 23)."""
    q, k, v = rand(2, 2, 2, 4), rand(2, 2, 6, 4), rand(2, 2, 6, 4)
    lens = np.array([3, 6], dtype=np.int64)
    (got,) = ours("Attention", [q, k, v, None, None, None, lens], {"is_causal": 1}, opset=24)
    for b, n in enumerate(lens):
        one = slice(b, b + 1)
        cut = n - q.shape[2]
        inputs = [
            q[one],
            k[one, :, cut:n],
            v[one, :, cut:n],
            None,
            k[one, :, :cut],
            v[one, :, :cut],
        ]
        (want,) = ours("Attention", inputs, {"is_causal": 1}, opset=23)
        np.testing.assert_allclose(got[one], want, rtol=1e-6)


def test_attention_fully_masked_row_is_zero() -> None:
    q, k, v = rand(1, 1, 2, 4), rand(1, 1, 3, 4), rand(1, 1, 3, 4)
    mask = np.array([[True, True, False], [False, False, False]])
    attrs = {"qk_matmul_output_mode": 3}
    y, _, _, probs = ours("Attention", [q, k, v, mask], attrs, opset=23, num_outputs=4)
    assert not np.isnan(y).any()
    np.testing.assert_array_equal(y[0, 0, 1], 0)
    np.testing.assert_array_equal(probs[0, 0, 1], 0)


def test_attention_window() -> None:
    """Opset 25: left_window_size=1 with is_causal sees the key itself and the one before."""
    q, k, v = rand(1, 1, 4, 4), rand(1, 1, 4, 4), rand(1, 1, 4, 4)
    (got,) = ours("Attention", [q, k, v], {"is_causal": 1, "left_window_size": 1}, opset=25)
    band = np.tri(4, dtype=bool) & ~np.tri(4, k=-2, dtype=bool)
    (want,) = ours("Attention", [q, k, v, band], {}, opset=23)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_attention_present_does_not_alias_inputs() -> None:
    q, k, v = rand(1, 2, 3, 4), rand(1, 2, 3, 4), rand(1, 2, 3, 4)
    _, pk, pv = ours("Attention", [q, k, v], {}, opset=23, num_outputs=3)
    assert not np.shares_memory(pk, k) and not np.shares_memory(pv, v)


@pytest.mark.parametrize(
    ("attrs", "word"),
    [
        ({"qk_matmul_output_mode": 4}, "qk_matmul_output_mode"),
        ({"softmax_precision": 16}, "softmax_precision"),
        ({"softcap": -1.0}, "softcap"),
    ],
)
def test_attention_refuses_by_name(attrs: dict[str, Any], word: str) -> None:
    q = rand(1, 1, 2, 4)
    with pytest.raises(ValueError, match=f"{word} .* not supported"):
        lookup("Attention", 23).fn(q, q, q, **attrs)


@pytest.mark.parametrize("interleaved", [0, 1])
@pytest.mark.parametrize("rotary_dim", [0, 4])
@pytest.mark.parametrize("three_d", [False, True])
@pytest.mark.parametrize("with_ids", [False, True])
def test_rotary_embedding(interleaved: int, rotary_dim: int, three_d: bool, with_ids: bool) -> None:
    b, h, s, d = 2, 3, 5, 8
    half = (rotary_dim or d) // 2
    x = rand(b, s, h * d) if three_d else rand(b, h, s, d)
    if with_ids:
        ids = RNG.integers(0, 7, size=(b, s)).astype(np.int64)
        cos, sin = rand(7, half), rand(7, half)
    else:
        ids, cos, sin = None, rand(b, s, half), rand(b, s, half)
    attrs = {"interleaved": interleaved, "rotary_embedding_dim": rotary_dim}
    if three_d:
        attrs["num_heads"] = h
    check_op("RotaryEmbedding", [x, cos, sin, ids], attrs, opset=23)


def test_rotary_embedding_refuses_odd_dim() -> None:
    x = rand(1, 1, 2, 6)
    with pytest.raises(ValueError, match="rotary_embedding_dim 3 is not supported"):
        lookup("RotaryEmbedding", 23).fn(x, rand(2, 1), rand(2, 1), rotary_embedding_dim=3)
