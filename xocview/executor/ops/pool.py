"""MaxPool, AveragePool, LpPool and their global forms.

numpy runs a ufunc over one contiguous run several times faster than over a strided view
with short rows (it buffers every operand that is not one run), and in a network a fresh
work array costs a page fault per page. So a pooling is worked out once per input shape
(a network pools the same few shapes on every pass) into a program of whole-buffer calls on
work buffers kept per thread:

- along an axis, the windows are reduced by one ufunc call per kernel tap on the whole
  flattened tensor shifted by the tap's offset, so that output position f combines the
  input at f + q for each tap offset q; positions whose window leaves the axis (the padded
  borders) come out wrong in that sweep and are redone from their in-range taps, and no
  padded copy is made;
- a strided last axis is first split into its phases (every stride-th item; for stride 2 by
  a contiguous cast of item pairs), so that it is swept at the output's resolution and the
  other axes see a fraction of the data; those are swept at full resolution and sampled
  once at the end, each sampled row copied as one item;
- AveragePool divides by its per-window counts in runs of whole planes.

Maxima are exact; sums may round differently from onnxruntime's (it adds a window's items
in row order, here axis by axis).

MaxPool's Indices output, and pads that together reach the window's span (so that a window
may lie wholly in the padding), take the tap loops over a padded copy instead.

This module holds the kernels, their geometry check and the Indices path; the Y-only
poolings are prepared in pool_prepared, and their sweeps and work buffers live in
pool_sweeps.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.pool_prepared import Ints, lowest, prepared
from xocview.executor.ops.spatial import Geometry, Index, geometry, pad_spatial, tap_slices
from xocview.executor.registry import kernel

__all__ = [
    "average_pool",
    "global_average_pool",
    "global_lp_pool",
    "global_max_pool",
    "lp_pool",
    "max_pool",
]


def _geometry(
    x: np.ndarray,
    kernel_shape: Ints,
    strides: Ints,
    dilations: Ints,
    pads: Ints,
    auto_pad: str | bytes,
    ceil_mode: int,
) -> Geometry:
    """The pooling windows; raises ValueError when kernel_shape is missing or the wrong length."""
    if not kernel_shape or len(kernel_shape) != x.ndim - 2:
        raise ValueError(f"kernel_shape {kernel_shape} does not fit input of shape {x.shape}")
    return geometry(
        x.shape[2:],
        kernel_shape,
        strides=strides,
        dilations=dilations,
        pads=pads,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
    )


def _max_with_indices(
    x: np.ndarray, g: Geometry, storage_order: int
) -> tuple[np.ndarray, np.ndarray]:
    """Max over each window and where it came from, as ONNX's flat index into X.

    The first maximal tap in row-major window order wins, as in onnxruntime. storage_order 1
    numbers the spatial positions column-major.
    """
    xp = pad_spatial(x, g, lowest(x.dtype))
    taps = list(np.ndindex(*g.kernel))
    first: Index = (Ellipsis, *tap_slices(g, taps[0]))
    best = np.array(xp[first], copy=True)
    which = np.zeros(best.shape, dtype=np.int64)
    for t, tap in enumerate(taps[1:], start=1):
        pick: Index = (Ellipsis, *tap_slices(g, tap))
        view = xp[pick]
        better = view > best
        np.copyto(best, view, where=better)
        which[better] = t
    spatial = x.shape[2:]
    rank = len(spatial)
    order = range(rank) if storage_order else range(rank - 1, -1, -1)
    flat = np.zeros_like(which)
    scale = 1
    table = np.array(taps, dtype=np.int64).reshape(-1, rank)
    for i in order:
        shape = [1] * (rank + 2)
        shape[i + 2] = g.out[i]
        start = (np.arange(g.out[i]) * g.strides[i] - g.begin[i]).reshape(shape)
        flat += (start + table[which, i] * g.dilations[i]) * scale
        scale *= spatial[i]
    plane = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * rank)
    flat += plane * scale
    return best, flat


@kernel("MaxPool", since=1)
def max_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """MaxPool-1: no dilations, ceil mode or Indices output."""
    return prepared("max", x, kernel_shape, strides, None, pads, auto_pad, 0)(x)


@kernel("MaxPool", since=8)
def max_pool_8(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    storage_order: int = 0,
    strides: Ints = None,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """MaxPool-8 adds the optional Indices output and its storage_order."""
    if num_outputs >= 2:
        g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0)
        return _max_with_indices(x, g, storage_order)
    return prepared("max", x, kernel_shape, strides, None, pads, auto_pad, 0)(x)


@kernel("MaxPool", since=10)
def max_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    pads: Ints = None,
    storage_order: int = 0,
    strides: Ints = None,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """MaxPool-10 on (11 and 12 only widen types): ceil_mode and dilations. Y alone by
    shifted whole-buffer maxima, (Y, Indices) by a tap loop that tracks the argmax."""
    if num_outputs >= 2:
        g = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
        return _max_with_indices(x, g, storage_order)
    return prepared("max", x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)(x)


@kernel("AveragePool", since=1)
def average_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-1: padding never counts."""
    return prepared("average", x, kernel_shape, strides, None, pads, auto_pad, 0, 0)(x)


@kernel("AveragePool", since=7)
def average_pool_7(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    count_include_pad: int = 0,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-7 adds count_include_pad."""
    run = prepared(
        "average", x, kernel_shape, strides, None, pads, auto_pad, 0, int(count_include_pad)
    )
    return run(x)


@kernel("AveragePool", since=10)
def average_pool_10(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-10 (and 11) add ceil_mode; the overhang past the pads never counts."""
    run = prepared(
        "average",
        x,
        kernel_shape,
        strides,
        None,
        pads,
        auto_pad,
        ceil_mode,
        int(count_include_pad),
    )
    return run(x)


@kernel("AveragePool", since=19)
def average_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-19 adds dilations."""
    run = prepared(
        "average",
        x,
        kernel_shape,
        strides,
        dilations,
        pads,
        auto_pad,
        ceil_mode,
        int(count_include_pad),
    )
    return run(x)


@kernel("LpPool", since=1)
def lp_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    p: float = 2.0,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-1 takes p as a float."""
    return prepared("lp", x, kernel_shape, strides, None, pads, auto_pad, 0, float(p))(x)


@kernel("LpPool", since=2)
def lp_pool_2(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    p: int = 2,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-2 (and 11) take p as an int."""
    return prepared("lp", x, kernel_shape, strides, None, pads, auto_pad, 0, int(p))(x)


@kernel("LpPool", since=18)
def lp_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    p: int = 2,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-18 adds ceil_mode and dilations."""
    run = prepared("lp", x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, int(p))
    return run(x)


def _spatial_axes(x: np.ndarray) -> tuple[int, ...]:
    return tuple(range(2, x.ndim))


@kernel("GlobalAveragePool", since=1)
def global_average_pool(x: np.ndarray) -> np.ndarray:
    """Mean over every spatial axis, kept as size-1 axes."""
    return np.mean(x, axis=_spatial_axes(x), keepdims=True, dtype=x.dtype)


@kernel("GlobalMaxPool", since=1)
def global_max_pool(x: np.ndarray) -> np.ndarray:
    """Max over every spatial axis, kept as size-1 axes."""
    return np.max(x, axis=_spatial_axes(x), keepdims=True)


@kernel("GlobalLpPool", since=1)
def global_lp_pool_1(x: np.ndarray, *, p: float = 2.0) -> np.ndarray:
    """GlobalLpPool-1 takes p as a float."""
    return global_lp_pool(x, p=p)


@kernel("GlobalLpPool", since=2)
def global_lp_pool(x: np.ndarray, *, p: float = 2) -> np.ndarray:
    """(sum over every spatial axis of |x|^p)^(1/p), kept as size-1 axes."""
    axes = _spatial_axes(x)
    if p == 2:
        return np.sqrt(np.sum(np.square(x), axis=axes, keepdims=True))
    total = np.sum(np.power(np.abs(x), x.dtype.type(p)), axis=axes, keepdims=True)
    return np.power(total, total.dtype.type(1.0 / p))
