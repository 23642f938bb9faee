"""MaxPool, AveragePool, LpPool and their global forms: in-place ufunc loops over kernel taps."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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

Ints = Sequence[int] | None


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


def _lowest(dtype: np.dtype) -> float | int:
    """The padding value that never wins a max."""
    return -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


def _reduce_windows(xp: np.ndarray, g: Geometry, op: np.ufunc) -> np.ndarray:
    """Combine every window with ``op`` one spatial axis at a time (max and sum separate).

    An axis of kernel k costs k strided in-place ufunc calls, so a 3x3 window needs 6 passes
    over shrinking arrays rather than 9. The result never shares memory with ``xp``.
    """
    rank = len(g.out)
    cur = xp
    for i in range(rank):
        k, d, s, o = g.kernel[i], g.dilations[i], g.strides[i], g.out[i]
        lead = (slice(None),) * (cur.ndim - rank + i)
        picks: list[Index] = [(*lead, slice(t * d, t * d + (o - 1) * s + 1, s)) for t in range(k)]
        taps = [cur[pick] for pick in picks]
        if k == 1:
            cur = taps[0]
            continue
        out = op(taps[0], taps[1])
        for view in taps[2:]:
            op(out, view, out=out)
        cur = out
    return np.array(cur, copy=True) if np.shares_memory(cur, xp) else cur


def _window_counts(g: Geometry, spatial: Sequence[int], include_pad: bool) -> np.ndarray:
    """How many taps of each window fall inside X (or inside X plus its declared pads).

    The count is a product over axes, built as an outer product of per-axis counts.
    """
    total = np.ones((), dtype=np.int64)
    for i, n in enumerate(spatial):
        k, d, s, o = g.kernel[i], g.dilations[i], g.strides[i], g.out[i]
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d
        lo, hi = (0, n + g.begin[i] + g.end[i] - g.overhang[i])
        if not include_pad:
            lo, hi = g.begin[i], g.begin[i] + n
        count = ((pos >= lo) & (pos < hi)).sum(axis=1)
        total = np.multiply.outer(total, count)
    return total


def _max_with_indices(
    x: np.ndarray, g: Geometry, storage_order: int
) -> tuple[np.ndarray, np.ndarray]:
    """Max over each window and where it came from, as ONNX's flat index into X.

    The first maximal tap in row-major window order wins, as in onnxruntime. storage_order 1
    numbers the spatial positions column-major.
    """
    xp = pad_spatial(x, g, _lowest(x.dtype))
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


def _max_pool(
    x: np.ndarray, g: Geometry, storage_order: int, num_outputs: int
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Y alone by separable maxima, or (Y, Indices) by a tap loop that tracks the argmax."""
    if num_outputs >= 2:
        return _max_with_indices(x, g, storage_order)
    return _reduce_windows(pad_spatial(x, g, _lowest(x.dtype)), g, np.maximum)


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
    g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0)
    return _reduce_windows(pad_spatial(x, g, _lowest(x.dtype)), g, np.maximum)


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
    g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0)
    return _max_pool(x, g, storage_order, num_outputs)


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
    """MaxPool-10 on (11 and 12 only widen types): ceil_mode and dilations."""
    g = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    return _max_pool(x, g, storage_order, num_outputs)


def _average(x: np.ndarray, g: Geometry, count_include_pad: int) -> np.ndarray:
    """Window sums over zero padding, divided by the per-window count in X's dtype."""
    y = _reduce_windows(pad_spatial(x, g, 0), g, np.add)
    if g.padded or count_include_pad:
        counts = _window_counts(g, x.shape[2:], bool(count_include_pad))
        y /= counts.astype(y.dtype)
    else:
        y /= y.dtype.type(np.prod(g.kernel))
    return y


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
    return _average(x, _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0), 0)


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
    g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0)
    return _average(x, g, count_include_pad)


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
    g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, ceil_mode)
    return _average(x, g, count_include_pad)


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
    g = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    return _average(x, g, count_include_pad)


def _lp(x: np.ndarray, g: Geometry, p: float) -> np.ndarray:
    """(sum over the window of |x|^p)^(1/p), zero padding, in X's dtype."""
    xp = pad_spatial(x, g, 0)
    if p == 2:
        y = _reduce_windows(np.square(xp), g, np.add)
        return np.sqrt(y, out=y)
    y = _reduce_windows(np.power(np.abs(xp), xp.dtype.type(p)), g, np.add)
    return np.power(y, y.dtype.type(1.0 / p), out=y)


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
    return _lp(x, _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0), float(p))


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
    return _lp(x, _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0), int(p))


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
    g = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
    return _lp(x, g, int(p))


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
