"""BatchNormalization, LayerNormalization, InstanceNormalization, GroupNormalization, LRN, MVN."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.row_sums import row_sums
from xocview.executor.ops.shape import axis_index
from xocview.executor.registry import kernel

__all__ = [
    "batch_normalization",
    "group_normalization",
    "instance_normalization",
    "layer_normalization",
    "lrn",
    "mean_variance_normalization",
]


def _per_channel(p: np.ndarray, x: np.ndarray) -> np.ndarray:
    """A (C,) parameter shaped to broadcast over (N, C, *spatial); (C, *spatial) ones as-is."""
    if p.ndim == 1:
        return p.reshape((-1,) + (1,) * (x.ndim - 2))
    return p


def _batch_norm_inference(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    epsilon: float,
) -> np.ndarray:
    """y = x * a + c with a = scale / sqrt(var + eps), c = B - mean * a: two passes over X.

    The folded per-channel a and c are computed in float64 and rounded once to X's dtype.
    """
    a = scale.astype(np.float64) / np.sqrt(var.astype(np.float64) + epsilon)
    c = b.astype(np.float64) - mean.astype(np.float64) * a
    y = np.multiply(x, _per_channel(a.astype(x.dtype), x))
    y += _per_channel(c.astype(x.dtype), x)
    return y


@kernel("BatchNormalization", since=1)
def batch_normalization_1(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    consumed_inputs: Sequence[int] | None = None,
    epsilon: float = 1e-5,
    is_test: int = 0,
    momentum: float = 0.9,
    spatial: int = 1,
) -> np.ndarray:
    """BatchNormalization-1 and -6, run with inference semantics (Y only) whatever is_test says.

    spatial=0 parameters of shape (C, *spatial) broadcast over the batch as they are.
    """
    return _batch_norm_inference(x, scale, b, mean, var, epsilon)


@kernel("BatchNormalization", since=7)
def batch_normalization_7(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    epsilon: float = 1e-5,
    momentum: float = 0.9,
    spatial: int = 1,
) -> np.ndarray:
    """BatchNormalization-7 drops is_test; inference semantics (Y only)."""
    return _batch_norm_inference(x, scale, b, mean, var, epsilon)


@kernel("BatchNormalization", since=9)
def batch_normalization_9(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    epsilon: float = 1e-5,
    momentum: float = 0.9,
) -> np.ndarray:
    """BatchNormalization-9 drops spatial; still inference semantics (Y only)."""
    return _batch_norm_inference(x, scale, b, mean, var, epsilon)


@kernel("BatchNormalization", since=14)
def batch_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    mean: np.ndarray,
    var: np.ndarray,
    *,
    epsilon: float = 1e-5,
    momentum: float = 0.9,
    training_mode: int = 0,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BatchNormalization-14/15: inference, or with training_mode the batch statistics.

    In training mode the outputs are Y normalised by the batch's own (biased) statistics and
    the running mean and variance blended with ``momentum``.
    """
    if not training_mode:
        return _batch_norm_inference(x, scale, b, mean, var, epsilon)
    axes = (0, *range(2, x.ndim))
    batch_mean = x.mean(axis=axes, dtype=x.dtype)
    batch_var = x.var(axis=axes, dtype=x.dtype)
    y = _batch_norm_inference(x, scale, b, batch_mean, batch_var, epsilon)
    if num_outputs == 1:
        return y
    m = mean.dtype.type(momentum)
    running_mean = mean * m + batch_mean.astype(mean.dtype) * (1 - m)
    running_var = var * m + batch_var.astype(var.dtype) * (1 - m)
    return y, running_mean, running_var


_STASH: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}


def _stash(stash_type: int) -> np.dtype:
    """The statistics' dtype, named by its TensorProto number (1 float, 10 half, 11 double).

    Raises ValueError for any other number.
    """
    if stash_type not in _STASH:
        raise ValueError(f"stash_type {stash_type}; expected 1 (float), 10 (half) or 11 (double)")
    return _STASH[stash_type]


def _standardise(
    x: np.ndarray, axes: tuple[int, ...], epsilon: float, dtype: np.dtype
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x - mean) * inv_std over ``axes`` in ``dtype``: (normalised, mean, inv_std), keepdims.

    Sums by ufunc reductions (``.mean`` adds a Python layer per call) or, along the last
    axis, by BLAS (row_sums), the variance's too; the scaling in place: a transformer export
    has a LayerNormalization per sub-layer on small tensors, where calls cost more than
    arithmetic.
    """
    xs = x.astype(dtype, copy=False)
    n = max(1, math.prod(x.shape[a] for a in axes))
    if axes == (x.ndim - 1,):
        mean = row_sums(xs, weight=1.0 / n)
        centred = xs - mean
        var = row_sums(np.square(centred), weight=1.0 / n)
    else:
        count = dtype.type(1.0 / n)
        mean = np.add.reduce(xs, axis=axes, keepdims=True, dtype=dtype)
        mean *= count
        centred = xs - mean
        var = np.add.reduce(np.square(centred), axis=axes, keepdims=True, dtype=dtype)
        var *= count
    var += dtype.type(epsilon)
    inv = np.sqrt(var, out=var)
    np.reciprocal(inv, out=inv)
    centred *= inv
    return centred, mean, inv


@kernel("LayerNormalization", since=17)
def layer_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray | None = None,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """Normalise over the axes from ``axis`` on; Mean and InvStdDev when the node asks for them."""
    start = axis_index(axis, x.ndim)
    axes = tuple(range(start, x.ndim))
    stash = _stash(stash_type)
    norm, mean, inv = _standardise(x, axes, epsilon, np.promote_types(x.dtype, stash))
    if norm.dtype == scale.dtype or norm.dtype == np.result_type(norm, scale):  # in place
        norm *= scale
        y = norm.astype(x.dtype, copy=False)
    else:
        y = (norm * scale).astype(x.dtype, copy=False)
    if b is not None:
        y += b
    if num_outputs == 1:
        return y
    return (y, mean.astype(stash, copy=False), inv.astype(stash, copy=False))[:num_outputs]


def _instance_norm(x: np.ndarray, scale: np.ndarray, b: np.ndarray, epsilon: float) -> np.ndarray:
    """Per (sample, channel) statistics over the spatial axes, then the channel's affine map."""
    norm, _, _ = _standardise(x, tuple(range(2, x.ndim)), epsilon, x.dtype)
    norm *= _per_channel(scale, x)
    norm += _per_channel(b, x)
    return norm


@kernel("InstanceNormalization", since=1)
def instance_normalization_1(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    *,
    consumed_inputs: Sequence[int] | None = None,
    epsilon: float = 1e-5,
) -> np.ndarray:
    """InstanceNormalization-1: consumed_inputs is a legacy optimisation hint, ignored."""
    return _instance_norm(x, scale, b, epsilon)


@kernel("InstanceNormalization", since=6)
def instance_normalization(
    x: np.ndarray, scale: np.ndarray, b: np.ndarray, *, epsilon: float = 1e-5
) -> np.ndarray:
    """InstanceNormalization-6."""
    return _instance_norm(x, scale, b, epsilon)


def _group_norm(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    epsilon: float,
    num_groups: int,
    dtype: np.dtype,
) -> np.ndarray:
    """Statistics over each group of channels and its spatial extent; per-channel affine map."""
    grouped = x.reshape(x.shape[0], num_groups, -1)
    norm, _, _ = _standardise(grouped, (2,), epsilon, dtype)
    norm = norm.reshape(x.shape)
    norm *= _per_channel(scale.astype(dtype, copy=False), x)
    norm += _per_channel(b.astype(dtype, copy=False), x)
    return norm.astype(x.dtype, copy=False)


@kernel("GroupNormalization", since=18)
def group_normalization_18(
    x: np.ndarray, scale: np.ndarray, b: np.ndarray, *, epsilon: float = 1e-5, num_groups: int
) -> np.ndarray:
    """GroupNormalization-18: scale and bias hold one value per group (deprecated in 21)."""
    per = x.shape[1] // num_groups
    return _group_norm(x, np.repeat(scale, per), np.repeat(b, per), epsilon, num_groups, x.dtype)


@kernel("GroupNormalization", since=21)
def group_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    b: np.ndarray,
    *,
    epsilon: float = 1e-5,
    num_groups: int,
    stash_type: int = 1,
) -> np.ndarray:
    """GroupNormalization-21: scale and bias per channel; statistics in the stash type."""
    dtype = np.promote_types(x.dtype, _stash(stash_type))
    return _group_norm(x, scale, b, epsilon, num_groups, dtype)


@kernel("LRN", since=1)
def lrn(
    x: np.ndarray,
    *,
    alpha: float = 1e-4,
    beta: float = 0.75,
    bias: float = 1.0,
    size: int,
) -> np.ndarray:
    """x / (bias + alpha / size * sum of squares over a window of channels) ** beta.

    The squares go once into a zero-padded buffer and the window sum is ``size`` shifted
    in-place adds, exact unlike a cumulative-sum difference. beta 0.75 uses two square roots.
    """
    c = x.shape[1]
    lo = (size - 1) // 2
    dt = x.dtype.type
    squares = np.zeros((x.shape[0], c + size - 1, *x.shape[2:]), dtype=x.dtype)
    np.square(x, out=squares[:, lo : lo + c])
    acc = np.array(squares[:, :c], copy=True)
    for i in range(1, size):
        acc += squares[:, i : i + c]
    acc *= dt(alpha / size)
    acc += dt(bias)
    if beta == 0.75:
        root = np.sqrt(acc, out=acc)
        root *= np.sqrt(root)
    else:
        np.power(acc, dt(beta), out=acc)
    return np.divide(x, acc, out=acc)


@kernel("MeanVarianceNormalization", since=9)
def mean_variance_normalization(x: np.ndarray, *, axes: Sequence[int] | None = None) -> np.ndarray:
    """(x - mean) / (std + 1e-9) over ``axes`` (by default 0, 2 and 3, as far as x has them),
    as the ONNX function body defines it."""
    if axes is None:
        chosen = tuple(sorted({a % x.ndim for a in (0, 2, 3)}))
    else:
        chosen = tuple(axis_index(int(a), x.ndim) for a in axes)
    xs = x.mean(axis=chosen, keepdims=True, dtype=x.dtype)
    centred = x - xs
    std = np.sqrt(np.square(centred).mean(axis=chosen, keepdims=True, dtype=x.dtype))
    centred /= std + x.dtype.type(1e-9)
    return centred
