"""onnxruntime's 8-bit poolings (com.microsoft): QLinearAveragePool and
QLinearGlobalAveragePool, as ``quantize(pool(dequantize(x)))``.

The sums follow onnxruntime's order and precision, so the rounding half to even lands on the
same integers: AveragePool adds each window's float32 values in row-major window order and
divides by the count; GlobalAveragePool sums the integers exactly and scales once by
x_scale / (y_scale * count).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.contrib_qlinear import (
    MS,
    per_tensor_scale,
    per_tensor_zero,
    to_quantized,
)
from xocview.executor.ops.quantize import EIGHT_BIT, check_dtype, quantize_rounded
from xocview.executor.ops.spatial import Index, geometry, pad_spatial, tap_slices
from xocview.executor.registry import kernel

__all__ = ["qlinear_average_pool", "qlinear_global_average_pool"]

F32 = np.float32


def _channels_first(x: np.ndarray, channels_last: int) -> np.ndarray:
    return np.moveaxis(x, -1, 1) if channels_last else x


def _channels_back(y: np.ndarray, channels_last: int) -> np.ndarray:
    return np.ascontiguousarray(np.moveaxis(y, 1, -1)) if channels_last else y


@kernel("QLinearAveragePool", domain=MS)
def qlinear_average_pool(
    X: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray | None = None,
    y_scale: np.ndarray | None = None,
    y_zero_point: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    channels_last: int = 0,
    count_include_pad: int = 0,
    kernel_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Average of each window of the dequantized X, quantized to Y: onnxruntime's float32 sum
    in row-major window order, divided by the taps inside X, or with count_include_pad by the
    kernel's size (onnxruntime counts ceil mode's overhang past the pads too, where ONNX's
    AveragePool does not)."""
    op = "QLinearAveragePool"
    check_dtype(op, "X", X, EIGHT_BIT)
    x = _channels_first(X, channels_last)
    if x.ndim < 3 or not kernel_shape or len(kernel_shape) != x.ndim - 2:
        raise ValueError(f"{op}: kernel_shape {kernel_shape} does not fit X of shape {X.shape}")
    g = geometry(
        x.shape[2:],
        kernel_shape,
        strides=strides,
        dilations=None,
        pads=pads,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
    )
    scale = per_tensor_scale(op, "x_scale", x_scale)
    zero = per_tensor_zero(op, "x_zero_point", x_zero_point, X.dtype)
    values = pad_spatial(scale * (x.astype(np.int32) - zero).astype(F32), g, 0.0)
    inside = pad_spatial(np.ones(x.shape[2:], dtype=F32), g, 0.0)
    total = np.zeros((*x.shape[:2], *g.out), dtype=F32)
    count = np.zeros(g.out, dtype=F32)
    for tap in np.ndindex(*g.kernel):
        pick: Index = (Ellipsis, *tap_slices(g, tap))
        total += values[pick]
        count += inside[pick]
    if count_include_pad:  # every window counts as whole, ceil mode's overhang too
        count[...] = np.prod(g.kernel)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = total / count
    y = to_quantized(
        mean,
        per_tensor_scale(op, "y_scale", y_scale),
        per_tensor_zero(op, "y_zero_point", y_zero_point, X.dtype),
        X.dtype,
    )
    return _channels_back(y, channels_last)


@kernel("QLinearGlobalAveragePool", domain=MS)
def qlinear_global_average_pool(
    X: np.ndarray,
    x_scale: np.ndarray,
    x_zero_point: np.ndarray,
    y_scale: np.ndarray,
    y_zero_point: np.ndarray,
    *,
    channels_last: int = 0,
) -> np.ndarray:
    """rint((sum(X) - count * x_zero) * (x_scale / (y_scale * count))) + y_zero per channel,
    the sum exact and the product in float32, as MLAS computes it; spatial axes kept as 1."""
    op = "QLinearGlobalAveragePool"
    check_dtype(op, "X", X, EIGHT_BIT)
    if X.ndim < 3:
        raise ValueError(f"{op}: X has shape {list(X.shape)}; expected rank 3 or more")
    x = _channels_first(X, channels_last)
    axes = tuple(range(2, x.ndim))
    count = int(np.prod(x.shape[2:]))
    zero = per_tensor_zero(op, "x_zero_point", x_zero_point, X.dtype)
    acc = x.sum(axis=axes, dtype=np.int64, keepdims=True) - zero * count
    factor = per_tensor_scale(op, "x_scale", x_scale) / (
        per_tensor_scale(op, "y_scale", y_scale) * F32(count)
    )
    out_zero = per_tensor_zero(op, "y_zero_point", y_zero_point, X.dtype)
    with np.errstate(invalid="ignore", over="ignore"):
        y = quantize_rounded(acc.astype(F32) * factor, np.asarray(float(out_zero)), X.dtype)
    return _channels_back(y, channels_last)
