"""Activation kernels: the Relu family, sigmoids, Gelu, Clip, Softmax, LogSoftmax, Hardmax."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.ops.blockwise import (
    BLOCK,
    blockwise,
    gelu_block,
    gelu_tanh_block,
    sigmoid_block,
    silu_block,
)
from xocview.executor.ops.row_sums import row_sums
from xocview.executor.ops.unary import erf_float64
from xocview.executor.registry import kernel

# Python float constants below keep the input's float dtype: under NEP 50 they are "weak".


@kernel("Relu", since=1)
def relu(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """NaN stays NaN, as in onnxruntime."""
    if x.dtype.kind == "f":
        return clipped(x, x.dtype.type(0), None)
    return np.asarray(np.maximum(x, 0))


# numpy's two-sided clip loop runs 3x faster than maximum on large arrays but costs ~2 us
# a call, where maximum costs 0.5 us: it wins from about this many elements.
_CLIP_LOOP_FROM = 8192


def clipped(x: np.ndarray, low: Any, high: Any, out: np.ndarray | None = None) -> np.ndarray:
    """x between ``low`` and ``high`` (None: unbounded above), NaN kept, into ``out`` if
    given; whichever of numpy's ways is faster for x's size."""
    if x.size >= _CLIP_LOOP_FROM:
        top = x.dtype.type(np.inf) if high is None else high
        return np.asarray(np.clip(x, low, top, out=out))
    if out is None:  # no out=None: a ufunc parses it slowly
        y = np.maximum(x, low)
        if type(y) is not np.ndarray:  # a 0-d x gives a numpy scalar
            y = np.asarray(y)
    else:
        y = np.maximum(x, low, out=out)
    return y if high is None else np.minimum(y, high, out=y)


@kernel("LeakyRelu", since=1)
def leaky_relu(
    x: np.ndarray, *, alpha: float = 0.01, consumed_inputs: list[int] | None = None
) -> np.ndarray:
    return np.where(x < 0, x * alpha, x)


@kernel("PRelu", since=1)
def prelu_1(
    x: np.ndarray, slope: np.ndarray, *, consumed_inputs: list[int] | None = None
) -> np.ndarray:
    """Opsets 1-6: a 1-D slope with one value per channel applies along axis 1 (Caffe's
    rule), a one-element slope everywhere."""
    if slope.ndim == 1 and x.ndim > 2 and slope.size > 1 and slope.shape[0] == x.shape[1]:
        slope = slope.reshape((-1,) + (1,) * (x.ndim - 2))
    return prelu(x, slope)


@kernel("PRelu", since=7)
def prelu(x: np.ndarray, slope: np.ndarray) -> np.ndarray:
    """The slope broadcasts numpy-style (unidirectionally: the output has x's shape)."""
    return np.where(x < 0, x * slope, x)


@kernel("Sigmoid", since=1)
def sigmoid(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """1 / (1 + exp(-x)) in place over cache-sized blocks; an overflowing exp gives 0, never
    NaN. Half precision is computed in float32."""
    return _float32_blocks(sigmoid_block, x, 0)


def silu(x: np.ndarray) -> np.ndarray:
    """x * sigmoid(x) as x / (1 + exp(-x)): SiLU has no ONNX op (exporters write Sigmoid and
    Mul); the run recognises that pair and calls this."""
    return _float32_blocks(silu_block, x, 1)


def _float32_blocks(body: Callable[..., None], x: np.ndarray, scratch: int) -> np.ndarray:
    """``body`` by blocks in float32 for float32 and float16 inputs (rounded back to float16),
    in float64 for the rest."""
    if x.dtype in (np.float32, np.float16):
        y = blockwise(body, x.astype(np.float32, copy=False), scratch)
        return y.astype(x.dtype, copy=False)
    return blockwise(body, np.asarray(x, dtype=np.float64), scratch).astype(x.dtype, copy=False)


@kernel("Tanh", since=1)
def tanh(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return np.asarray(np.tanh(x))


@kernel("Gelu", since=20)
def gelu(x: np.ndarray, *, approximate: str = "none") -> np.ndarray:
    """Exact: x * Phi(x) through erf (float32 for float32 and half inputs, else float64).
    ``tanh``: the usual approximation."""
    if approximate == "tanh":
        return _float32_blocks(gelu_tanh_block, x, 1)
    if approximate != "none":
        raise ValueError(f"Gelu: approximate {approximate!r}; expected 'none' or 'tanh'")
    if x.dtype in (np.float32, np.float16):
        return _float32_blocks(gelu_block, x, 3)
    wide = x.astype(np.float64)
    phi = erf_float64(wide * math.sqrt(0.5))
    phi += 1
    phi *= 0.5 * wide
    return phi.astype(x.dtype, copy=False)


@kernel("HardSigmoid", since=1)
def hard_sigmoid(
    x: np.ndarray,
    *,
    alpha: float = 0.2,
    beta: float = 0.5,
    consumed_inputs: list[int] | None = None,
) -> np.ndarray:
    y = np.asarray(x * alpha)
    y += beta
    return np.clip(y, 0, 1, out=y)


@kernel("HardSwish", since=14)
def hard_swish(x: np.ndarray) -> np.ndarray:
    """x * HardSigmoid(x) with alpha 1/6, beta 0.5: four whole-array passes (cheap ones: by
    blocks, as the exp-based activations run, measured slower here)."""
    return np.asarray(x * hard_sigmoid(x, alpha=1 / 6))


def _expm1_negative(x: np.ndarray) -> np.ndarray:
    """exp(x) - 1 on the negative part of x (0 elsewhere): no overflow for large x."""
    return np.asarray(np.expm1(np.minimum(x, 0)))


@kernel("Elu", since=1)
def elu(
    x: np.ndarray, *, alpha: float = 1.0, consumed_inputs: list[int] | None = None
) -> np.ndarray:
    return np.where(x < 0, alpha * _expm1_negative(x), x)


@kernel("Selu", since=1)
def selu_1(
    x: np.ndarray,
    *,
    alpha: float = 1.673200011253357,
    gamma: float = 1.0506999492645264,
    consumed_inputs: list[int] | None = None,
) -> np.ndarray:
    """Opset 1's defaults were rounder than opset 6's."""
    return selu(x, alpha=alpha, gamma=gamma)


@kernel("Selu", since=6)
def selu(
    x: np.ndarray,
    *,
    alpha: float = 1.67326319217681884765625,
    gamma: float = 1.05070102214813232421875,
) -> np.ndarray:
    return np.where(x > 0, gamma * x, (gamma * alpha) * _expm1_negative(x))


@kernel("Celu", since=12)
def celu(x: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    return np.where(x < 0, alpha * _expm1_negative(x / alpha), x)


@kernel("Softplus", since=1)
def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)) without overflow."""
    return np.asarray(np.logaddexp(x, 0))


@kernel("Softsign", since=1)
def softsign(x: np.ndarray) -> np.ndarray:
    d = np.asarray(np.abs(x))
    d += 1
    return np.asarray(np.divide(x, d, out=d))


@kernel("Mish", since=18)
def mish(x: np.ndarray) -> np.ndarray:
    y = softplus(x)
    np.tanh(y, out=y)
    y *= x
    return y


@kernel("ThresholdedRelu", since=10)
def thresholded_relu(x: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    return np.where(x > alpha, x, 0)


def _clip(x: np.ndarray, low: np.ndarray | None, high: np.ndarray | None) -> np.ndarray:
    """max(x, low) then min(., high): with low > high everything becomes high; NaN stays."""
    if low is not None and high is not None:
        return clipped(x, low, high)
    out = x
    if low is not None:
        out = np.asarray(np.maximum(out, low))
    if high is not None:
        out = np.asarray(np.minimum(out, high, out=out if out is not x else None))
    return out


def _bound(value: float | np.ndarray | None, dtype: np.dtype) -> np.ndarray | None:
    """A Clip bound as a 0-d array of x's dtype (float32's limits overflow float16 to inf)."""
    if value is None:
        return None
    with np.errstate(over="ignore"):
        return np.asarray(value).reshape(()).astype(dtype)


@kernel("Clip", since=1)
def clip_1(
    x: np.ndarray,
    *,
    max: float | None = None,  # ONNX's names shadow the builtins here
    min: float | None = None,
    consumed_inputs: list[int] | None = None,
) -> np.ndarray:
    """Opset 1: bounds are attributes, and an absent one does not clip."""
    return _clip(x, _bound(min, x.dtype), _bound(max, x.dtype))


@kernel("Clip", since=6)
def clip_6(
    x: np.ndarray,
    *,
    max: float = 3.4028234663852886e38,  # ONNX's names shadow the builtins here
    min: float = -3.4028234663852886e38,
) -> np.ndarray:
    """Opsets 6-10: absent bounds default to float32's limits."""
    return _clip(x, _bound(min, x.dtype), _bound(max, x.dtype))


@kernel("Clip", since=11)
def clip(
    x: np.ndarray,
    min: np.ndarray | None = None,  # ONNX's names shadow the builtins here
    max: np.ndarray | None = None,
) -> np.ndarray:
    """Opset 11 on: bounds are optional scalar inputs; an absent one is the dtype's limit, so
    float infinities become the largest finite value (as onnxruntime does)."""
    return _clip(x, *clip_bounds(x.dtype, min, max))


def clip_bounds(
    dtype: np.dtype, low: Any = None, high: Any = None
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Clip-11's bounds as 0-d arrays of ``dtype``: an absent one is a float type's limit
    (so float infinities become the largest finite value, as onnxruntime does), none for
    integers."""
    lo, hi = _bound(low, dtype), _bound(high, dtype)
    if dtype.kind == "f":
        top = np.finfo(dtype).max
        lo = np.asarray(-top, dtype) if lo is None else lo
        hi = np.asarray(top, dtype) if hi is None else hi
    return lo, hi


def _as_2d(x: np.ndarray, axis: int) -> np.ndarray:
    """Opsets 1-12 flattened x to 2-D at ``axis`` and worked along the second dimension."""
    if not -x.ndim <= axis <= x.ndim:
        raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
    axis = axis + x.ndim if axis < 0 else axis
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


# Rows up to this long are shifted by one bound for the whole tensor where that is safe: numpy
# reduces each short row in a call of its own (128 rows of 16: 7.7 us for their maxima).
_SHORT_ROWS = 128
# exp of a value this far below the shift is still a normal float32 (e^-87 is its smallest):
# no row can underflow to a zero sum, and nothing above the shift can overflow. (float16's
# normal range ends at e^-9.7: it keeps the per-row maximum.)
_SAFE_SPREAD = 80.0
_WIDE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _shifted(x: np.ndarray, axis: int, out: np.ndarray | None = None) -> np.ndarray:
    """x minus its maximum along ``axis`` (into ``out`` if given), the usual guard against exp
    overflowing.

    With short rows of floats whose values all lie within _SAFE_SPREAD of each other, the
    tensor's maximum serves every row: the same softmax, exactly as well conditioned, without
    a reduction per row. Masked scores (-inf, -1e4) or NaN take the per-row maximum.
    """
    shift: Any = None
    if x.dtype in _WIDE_FLOATS and x.shape[axis] <= _SHORT_ROWS and x.size:
        top, bottom = np.maximum.reduce(x, axis=None), np.minimum.reduce(x, axis=None)
        if top - bottom <= _SAFE_SPREAD:  # False for NaN and infinities
            shift = top
    if shift is None:
        shift = np.maximum.reduce(x, axis=axis, keepdims=True)
    if out is None:
        return np.asarray(np.subtract(x, shift))
    return np.asarray(np.subtract(x, shift, out=out))


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
    if x.size == 0:
        return x.copy()
    last = axis in (-1, x.ndim - 1)
    if last and x.dtype in _WIDE_FLOATS and x.size > BLOCK and x.shape[-1] <= BLOCK // 4:
        return _softmax_by_rows(x)
    e = _shifted(x, axis)
    np.exp(e, out=e)
    if last:
        total = row_sums(e)
        np.reciprocal(total, out=total)
        e *= total
    else:
        e /= np.sum(e, axis=axis, keepdims=True)
    return e


def _softmax_by_rows(x: np.ndarray) -> np.ndarray:
    """Softmax along the last axis a block of whole rows at a time, each pass into the output
    while the block is in cache: an attention's scores are megabytes, and five passes over
    all of them went through memory (10.5 ms against 7.7 ms for 4 x 750 x 750 float32)."""
    if not x.flags.c_contiguous:
        x = np.array(x, order="C")
    n = x.shape[-1]
    rows, out = x.reshape(-1, n), np.empty_like(x)
    outs = out.reshape(-1, n)
    step = max(1, BLOCK // n)
    with np.errstate(over="ignore", invalid="ignore"):
        for start in range(0, rows.shape[0], step):
            e = outs[start : start + step]
            _shifted(rows[start : start + step], 1, out=e)
            np.exp(e, out=e)
            total = row_sums(e)
            np.reciprocal(total, out=total)
            e *= total
    return out


def _log_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
    if x.size == 0:
        return x.copy()
    s = _shifted(x, axis)
    s -= np.log(np.sum(np.exp(s), axis=axis, keepdims=True))
    return s


def _hardmax(x: np.ndarray, axis: int) -> np.ndarray:
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for rank {x.ndim}")
    """1 at the first maximum along ``axis``, 0 elsewhere."""
    out = np.zeros_like(x)
    if x.size:
        first = np.argmax(x, axis=axis, keepdims=True)
        np.put_along_axis(out, first, 1, axis=axis)
    return out


@kernel("Softmax", since=1)
def softmax_1(x: np.ndarray, *, axis: int = 1) -> np.ndarray:
    return _softmax(_as_2d(x, axis), 1).reshape(x.shape)


@kernel("Softmax", since=13)
def softmax(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    return _softmax(x, axis)


@kernel("LogSoftmax", since=1)
def log_softmax_1(x: np.ndarray, *, axis: int = 1) -> np.ndarray:
    return _log_softmax(_as_2d(x, axis), 1).reshape(x.shape)


@kernel("LogSoftmax", since=13)
def log_softmax(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    return _log_softmax(x, axis)


@kernel("Hardmax", since=1)
def hardmax_1(x: np.ndarray, *, axis: int = 1) -> np.ndarray:
    return _hardmax(_as_2d(x, axis), 1).reshape(x.shape)


@kernel("Hardmax", since=13)
def hardmax(x: np.ndarray, *, axis: int = -1) -> np.ndarray:
    return _hardmax(x, axis)
