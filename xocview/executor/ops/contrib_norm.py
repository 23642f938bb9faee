"""onnxruntime's fused normalisations: SkipLayerNormalization, SkipSimplifiedLayerNormalization
and EmbedLayerNormalization (com.microsoft), and the LayerNormalization-1 and
SimplifiedLayerNormalization-1 it defines in ONNX's own domain (its optimizer writes them at
opsets below LayerNormalization-17)."""

from __future__ import annotations

import math
from typing import cast

import numpy as np

from xocview.executor.ops.normalization import layer_normalization
from xocview.executor.ops.row_sums import row_sums
from xocview.executor.ops.shape import axis_index
from xocview.executor.registry import kernel

__all__ = [
    "embed_layer_normalization",
    "layer_normalization_1",
    "simplified_layer_normalization",
    "skip_layer_normalization",
    "skip_simplified_layer_normalization",
]

MS = "com.microsoft"
# stash_type: TensorProto number -> numpy dtype of the statistics
_STASH: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}

Outputs = np.ndarray | tuple[np.ndarray | None, ...]


def _stash(stash_type: int) -> np.dtype:
    if stash_type not in _STASH:
        raise ValueError(f"stash_type {stash_type}; expected 1 (float), 10 (half) or 11 (double)")
    return _STASH[stash_type]


def _rms(
    x: np.ndarray, start: int, epsilon: float, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray]:
    """x / sqrt(mean(x^2) + epsilon) over the axes from ``start`` on, in ``dtype``:
    (normalised, inv_std_var with those axes kept as 1)."""
    xs = x.astype(dtype, copy=False)
    n = max(1, math.prod(x.shape[start:]))
    if start == x.ndim - 1:
        ms = row_sums(np.square(xs), weight=1.0 / n)
    else:
        axes = tuple(range(start, x.ndim))
        ms = np.add.reduce(np.square(xs), axis=axes, keepdims=True, dtype=dtype)
        ms *= dtype.type(1.0 / n)
    ms += dtype.type(epsilon)
    inv = np.sqrt(ms, out=ms)
    np.reciprocal(inv, out=inv)
    return xs * inv, inv


@kernel("LayerNormalization", since=1)
def layer_normalization_1(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray | None = None,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
    num_outputs: int = 1,
) -> Outputs:
    """onnxruntime's LayerNormalization before ONNX adopted it at opset 17: the same op."""
    return layer_normalization(
        x, scale, b, axis=axis, epsilon=epsilon, stash_type=stash_type, num_outputs=num_outputs
    )


@kernel("SimplifiedLayerNormalization", since=1)
def simplified_layer_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
    num_outputs: int = 1,
) -> Outputs:
    """RMS normalisation (no mean subtracted) over the axes from ``axis`` on, times scale;
    Y takes scale's dtype, inv_std_var the stash type."""
    start = axis_index(axis, x.ndim)
    stash = _stash(stash_type)
    norm, inv = _rms(x, start, epsilon, np.promote_types(x.dtype, stash))
    norm *= scale
    y = norm.astype(scale.dtype, copy=False)
    if num_outputs == 1:
        return y
    return y, inv.astype(stash, copy=False)


def _skip_sum(
    x: np.ndarray, skip: np.ndarray, bias: np.ndarray | None, gamma: np.ndarray, op: str
) -> np.ndarray:
    """input + skip (+ bias), checked as onnxruntime checks it: skip is (S, H), (1, S, H) or
    of input's shape, and every parameter holds hidden_size values."""
    hidden = x.shape[-1] if x.ndim else 0
    fits = skip.shape in (x.shape, x.shape[1:], (1, *x.shape[1:]))
    if x.ndim not in (2, 3) or not fits:
        raise ValueError(
            f"{op}: input {x.shape} and skip {skip.shape} disagree; expected skip of the input's "
            "shape, or without its batch axis"
        )
    for name, p in (("gamma", gamma), ("bias", bias)):
        if p is not None and p.shape != (hidden,):
            raise ValueError(f"{op}: {name} has shape {p.shape}; expected ({hidden},)")
    total = x + skip
    if bias is not None:
        total += bias
    return total


@kernel("SkipLayerNormalization", domain=MS)
def skip_layer_normalization(
    x: np.ndarray,
    skip: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray | None = None,
    bias: np.ndarray | None = None,
    *,
    epsilon: float = 1e-12,
    num_outputs: int = 1,
) -> Outputs:
    """LayerNormalization over the hidden axis of input + skip + bias: output, mean,
    inv_std_var and the sum itself (input_skip_bias_sum)."""
    total = _skip_sum(x, skip, bias, gamma, "SkipLayerNormalization")
    if beta is not None and beta.shape != gamma.shape:
        raise ValueError(
            f"SkipLayerNormalization: beta has shape {beta.shape}; expected {gamma.shape}"
        )
    if num_outputs == 1:
        return layer_normalization(total, gamma, beta, epsilon=epsilon)
    y, mean, inv = layer_normalization(total, gamma, beta, epsilon=epsilon, num_outputs=3)
    return (y, mean, inv, total)[:num_outputs]


@kernel("SkipSimplifiedLayerNormalization", domain=MS)
def skip_simplified_layer_normalization(
    x: np.ndarray,
    skip: np.ndarray,
    gamma: np.ndarray,
    bias: np.ndarray | None = None,
    *,
    epsilon: float = 1e-12,
    num_outputs: int = 1,
) -> Outputs:
    """RMS normalisation of input + skip + bias times gamma: output, (mean: not computed,
    an RMS norm has none), inv_std_var and the sum."""
    total = _skip_sum(x, skip, bias, gamma, "SkipSimplifiedLayerNormalization")
    norm, inv = _rms(total, total.ndim - 1, epsilon, np.promote_types(total.dtype, np.float32))
    norm *= gamma
    y = norm.astype(x.dtype, copy=False)
    if num_outputs == 1:
        return y
    return (y, None, inv, total)[:num_outputs]


def _rows(table: np.ndarray, ids: np.ndarray, what: str) -> np.ndarray:
    """table[ids], refusing ids outside the table (onnxruntime: "input index out of range")."""
    n = table.shape[0]
    if ids.size and (ids.min() < 0 or ids.max() >= n):
        raise ValueError(f"EmbedLayerNormalization: {what} must be in 0..{n - 1}")
    return table[ids.astype(np.intp, copy=False)]


def _given(x: np.ndarray | None, name: str, position: int) -> np.ndarray:
    if x is None:
        raise ValueError(f"EmbedLayerNormalization needs input {position} ({name}); it is left out")
    return x


@kernel("EmbedLayerNormalization", domain=MS)
def embed_layer_normalization(
    input_ids: np.ndarray,
    segment_ids: np.ndarray | None = None,
    word_embedding: np.ndarray | None = None,
    position_embedding: np.ndarray | None = None,
    segment_embedding: np.ndarray | None = None,
    gamma: np.ndarray | None = None,
    beta: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    position_ids: np.ndarray | None = None,
    *,
    epsilon: float = 1e-12,
    mask_index_type: int = 1,
    num_outputs: int = 1,
) -> Outputs:
    """BERT's embeddings: LayerNorm(word[ids] + position[position_ids or 0..S-1] +
    segment[segment_ids]); mask_index counts each row's mask entries equal to 1 (zeros
    without a mask); embedding_sum is the sum before normalisation. (Inputs after the
    optional segment_ids take defaults only so that it may be left out.)"""
    words = _given(word_embedding, "word_embedding", 2)
    places = _given(position_embedding, "position_embedding", 3)
    scale, shift = _given(gamma, "gamma", 5), _given(beta, "beta", 6)
    if input_ids.ndim != 2:
        raise ValueError(
            f"EmbedLayerNormalization: input_ids has shape {input_ids.shape}; expected 2-D"
        )
    b, s = input_ids.shape
    if position_ids is None:
        positions: np.ndarray = np.arange(s)
    else:
        positions = np.broadcast_to(position_ids, (b, s))
    total = _rows(words, input_ids, "input_ids")
    total += _rows(places, positions, "positions")
    if segment_ids is not None and segment_embedding is not None:
        total += _rows(segment_embedding, segment_ids, "segment_ids")
    y = cast(np.ndarray, layer_normalization(total, scale, shift, epsilon=epsilon))
    if num_outputs == 1:
        return y
    if mask is None:
        index = np.zeros(b, np.int32)
    else:
        index = np.count_nonzero(mask.reshape(b, -1) == 1, axis=1).astype(np.int32)
    return (y, index, total)[:num_outputs]
