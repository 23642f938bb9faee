"""Pooling of Y alone (max, average and Lp), prepared once per input shape and attributes.

A network pools the same few shapes on every pass, so each pooling is set up once into a
run: a compiled sweep (pool_sweeps) where the windows allow it, a whole-extent reduction for
a global window, else the tap loops over a padded copy. AveragePool then divides by its
per-window counts in runs of whole planes.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence

import numpy as np

from xocview.executor.ops.pool_sweeps import sweep_program
from xocview.executor.ops.spatial import Geometry, Index, geometry, pad_spatial

__all__ = ["Ints", "Run", "lowest", "prepared"]

Ints = Sequence[int] | None


def lowest(dtype: np.dtype) -> float | int:
    """The padding value that never wins a max."""
    return -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


# A prepared pooling, X -> Y, for one input shape and dtype and one set of attributes.
Run = Callable[[np.ndarray], np.ndarray]


def prepared(
    kind: str,
    x: np.ndarray,
    kernel_shape: Ints,
    strides: Ints,
    dilations: Ints,
    pads: Ints,
    auto_pad: str | bytes,
    ceil_mode: int,
    extra: float = 0,
) -> Run:
    """The prepared ``kind`` pooling ("max", "average" with count_include_pad ``extra``, "lp"
    with p ``extra``) for x; raises ValueError when kernel_shape is missing or the wrong
    length, or for attributes geometry() refuses."""
    if not kernel_shape or len(kernel_shape) != x.ndim - 2:
        raise ValueError(f"kernel_shape {kernel_shape} does not fit input of shape {x.shape}")
    return _prepare(
        kind,
        x.shape,
        x.dtype,
        tuple(kernel_shape),
        None if strides is None else tuple(strides),
        None if dilations is None else tuple(dilations),
        None if pads is None else tuple(pads),
        auto_pad,
        int(ceil_mode),
        extra,
    )


@functools.lru_cache(maxsize=512)
def _prepare(
    kind: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    kernel_shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    dilations: tuple[int, ...] | None,
    pads: tuple[int, ...] | None,
    auto_pad: str | bytes,
    ceil_mode: int,
    extra: float,
) -> Run:
    """prepared's work, remembered: a network pools the same few shapes on every pass, and
    on small tensors the Python that sets a pooling up is a large part of its time."""
    g = geometry(
        shape[2:],
        kernel_shape,
        strides=strides,
        dilations=dilations,
        pads=pads,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
    )
    if kind == "max":
        return _max_run(shape, dtype, g)
    if kind == "average":
        return _average_run(shape, dtype, g, bool(extra))
    return _lp_run(shape, dtype, g, extra)


def _whole(shape: tuple[int, ...], g: Geometry) -> bool:
    """Whether the only window is the whole unpadded spatial extent (a global pool)."""
    return (
        math.prod(shape) > 0
        and not g.padded
        and all(o == 1 for o in g.out)
        and g.kernel == shape[len(shape) - len(g.out) :]
        and all(d == 1 for d in g.dilations)
    )


def _windows_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, op: np.ufunc) -> Run:
    """Every window reduced by ``op`` (np.maximum or np.add, the padding never counting), as
    a fresh contiguous array."""
    identity = lowest(dtype) if op is np.maximum else 0
    program = sweep_program(shape, dtype, g, op, identity)
    if program is not None:
        return lambda x: program(np.ascontiguousarray(x))
    # the strided result of an axis of kernel 1 may be a view
    return lambda x: np.ascontiguousarray(_reduce_windows(pad_spatial(x, g, identity), g, op))


def _max_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry) -> Run:
    """The maximum of every window."""
    if not _whole(shape, g):
        return _windows_run(shape, dtype, g, np.maximum)
    lead = shape[: len(shape) - len(g.out)]

    def run(x: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(x).reshape(*lead, -1)
        return np.maximum.reduce(flat, axis=-1).reshape(lead + g.out)

    return run


def _average_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, include_pad: bool) -> Run:
    """Window sums over zero padding, divided by the per-window count in X's dtype."""
    if _whole(shape, g) and dtype in (np.float32, np.float64):
        sums = _whole_sums(shape, dtype, g)
    else:
        sums = _windows_run(shape, dtype, g, np.add)
    counts, tiled = _divisors(g, shape[len(shape) - len(g.out) :], include_pad, dtype)

    def run(x: np.ndarray) -> np.ndarray:
        y = sums(x)
        if tiled is None:
            return np.divide(y, counts, out=y)
        # Dividing by the (H, W) counts broadcast over N * C makes numpy buffer every
        # operand; contiguous runs of whole planes against the counts tiled as often are
        # several times faster.
        flat = y.reshape(-1)
        for start in range(0, flat.size, tiled.size):
            part = flat[start : start + tiled.size]
            np.divide(part, tiled[: part.size], out=part)
        return y

    return run


def _whole_sums(shape: tuple[int, ...], dtype: np.dtype, g: Geometry) -> Run:
    """Sums over the whole spatial extent as a product with ones: x * 1 is exact, so it is a
    plain sum, and BLAS sums rows of a few dozen items far faster than numpy's reduction."""
    lead = shape[: len(shape) - len(g.out)]
    ones = np.ones(math.prod(g.kernel), dtype)
    return lambda x: (np.ascontiguousarray(x).reshape(math.prod(lead), -1) @ ones).reshape(
        lead + g.out
    )


# The counts tiled over whole planes to about this many items, for the division in runs.
_RUN = 1 << 15


def _divisors(
    g: Geometry, spatial: tuple[int, ...], include_pad: bool, dtype: np.dtype
) -> tuple[np.ndarray | np.generic, np.ndarray | None]:
    """What the window sums are divided by: the counts (a scalar when they are all one
    number: the same quotients) and, for varying counts, the counts of several planes in a
    row."""
    if not (g.padded or include_pad):
        return dtype.type(math.prod(g.kernel)), None
    counts = _window_counts(g, spatial, include_pad).astype(dtype)
    if counts.size == 0 or (counts == counts.flat[0]).all():
        return (counts.flat[0] if counts.size else counts), None
    return counts, np.tile(counts.reshape(-1), max(1, _RUN // counts.size))


def _lp_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, p: float) -> Run:
    """(sum over the window of |x|^p)^(1/p), zero padding, in X's dtype."""
    if p <= 0:  # zero padding raised to p is no longer zero: pad first, as the spec does
        return lambda x: _lp_padded(x, g, p)
    sums = _windows_run(shape, dtype, g, np.add)
    if p == 2:
        return lambda x: np.sqrt(y := sums(np.square(x)), out=y)
    power, root = dtype.type(p), dtype.type(1.0 / p)
    return lambda x: np.power(y := sums(np.power(np.abs(x), power)), root, out=y)


def _lp_padded(x: np.ndarray, g: Geometry, p: float) -> np.ndarray:
    xp = pad_spatial(x, g, 0)
    if p == 2:
        y = _reduce_windows(np.square(xp), g, np.add)
        return np.sqrt(y, out=y)
    y = _reduce_windows(np.power(np.abs(xp), xp.dtype.type(p)), g, np.add)
    return np.power(y, y.dtype.type(1.0 / p), out=y)


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
