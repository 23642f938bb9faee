"""QAttention and QEmbedLayerNormalization, one node at a time, against onnxruntime on seeded
inputs (floats to 1e-4 relative). Weights of int8 keep to 7 bits: onnxruntime's AVX2 uint8 x
int8 product saturates sums of product pairs to int16, the documented product does not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.test_contrib_qops import check, ours

pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(31)
B, S, HIDDEN, VOCAB = 2, 5, 16, 30


def _scalar(value: float, dtype: Any = np.float32) -> np.ndarray:
    return np.asarray(value, dtype)


@pytest.mark.parametrize("w_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column", [False, True])
@pytest.mark.parametrize("mask", [None, np.array([5, 3], np.int32)])
def test_qattention(w_dtype: Any, per_column: bool, mask: np.ndarray | None) -> None:
    x = RNG.integers(0, 256, (B, S, HIDDEN)).astype(np.uint8)
    lo = -64 if w_dtype == np.int8 else 0
    w = RNG.integers(lo, lo + 128, (HIDDEN, 3 * HIDDEN)).astype(w_dtype)
    w_scale = (
        RNG.uniform(0.002, 0.02, 3 * HIDDEN).astype(np.float32) if per_column else _scalar(0.01)
    )
    w_zero = np.full(3 * HIDDEN, 3, w_dtype) if per_column else _scalar(3, w_dtype)
    bias = RNG.standard_normal(3 * HIDDEN).astype(np.float32)
    args = [x, w, bias, _scalar(0.02), w_scale, mask, _scalar(120, np.uint8), w_zero]
    check("QAttention", args, {"num_heads": 2})


def test_qattention_unidirectional_with_present() -> None:
    x = RNG.integers(0, 256, (B, S, HIDDEN)).astype(np.uint8)
    w = RNG.integers(0, 256, (HIDDEN, 3 * HIDDEN)).astype(np.uint8)
    bias = RNG.standard_normal(3 * HIDDEN).astype(np.float32)
    args = [
        x,
        w,
        bias,
        _scalar(0.02),
        _scalar(0.01),
        None,
        _scalar(128, np.uint8),
        _scalar(128, np.uint8),
    ]
    check("QAttention", args, {"num_heads": 4, "unidirectional": 1}, n=2)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("segments", [True, False])
def test_qembed_layer_normalization(dtype: Any, segments: bool) -> None:
    info = np.iinfo(dtype)

    def q(*shape: int) -> np.ndarray:
        return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)

    def s() -> np.ndarray:
        return _scalar(RNG.uniform(0.01, 0.05))

    ids = RNG.integers(0, VOCAB, (B, S)).astype(np.int32)
    seg = RNG.integers(0, 2, (B, S)).astype(np.int32) if segments else None
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32) if segments else None
    z = _scalar(3, dtype)
    args = [ids, seg, q(VOCAB, HIDDEN), q(S, HIDDEN), q(2, HIDDEN) if segments else None]
    args += [q(HIDDEN), q(HIDDEN), mask, s(), s(), s() if segments else None, s(), s()]
    args += [z, z, z if segments else None, z, z]
    check("QEmbedLayerNormalization", args, {"epsilon": 1e-5}, n=2)


def test_qembed_needs_its_word_embedding() -> None:
    ids = np.zeros((1, 2), np.int32)
    with pytest.raises(ValueError, match="word_embedding is required"):
        ours("QEmbedLayerNormalization", [ids], n=2)
