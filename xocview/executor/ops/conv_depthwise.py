"""Depthwise Conv (one input channel per group): per channel, W @ its shifted copies of X."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from xocview.executor.ops.conv_layout import (
    Layout,
    Run,
    Shape,
    balanced_band,
    cropped_copy,
    padded_spatial,
    row_strides,
    strided_view,
)
from xocview.executor.ops.spatial import Geometry, Index

__all__ = ["depthwise"]

# Working-set bytes per block of channels: about an L2 cache (as Conv's im2col bands), so
# that the patches one step writes the next reads from cache.
_BLOCK_BYTES = 1 << 20
_FILL_BYTES = 1 << 18


def _plane_fills(xshape: Shape, g: Geometry) -> list[tuple[int, list[slice], list[slice]]]:
    """(plane, into, from): spatial slices that copy X into its zero-padded stride-phase planes.

    In the plane of phase ``p`` (np.ndindex order over the strides) element ``q`` is padded
    X's element ``p + stride * q``, so a strided tap is a plain shift within one plane (at
    unit stride the only plane is padded X).
    """
    fills = []
    for i, phase in enumerate(np.ndindex(*g.strides)):
        src, dst = [], []
        for p, s, b, size in zip(phase, g.strides, g.begin, xshape[2:], strict=True):
            q0 = max(0, -(-(b - p) // s))  # first plane index that lands inside X
            first = p + s * q0 - b
            src.append(slice(first, size, s))
            dst.append(slice(q0, q0 + len(range(first, size, s))))
        fills.append((i, dst, src))
    return fills


def _tap_grids(
    g: Geometry, qstrides: Shape
) -> tuple[list[tuple[int, int, Shape, Shape]], list[int], int]:
    """The kernel taps grouped by stride phase, each group a regular grid of shifts.

    Returns (groups, order, reach): per group (phase index, base shift, grid shape, grid
    steps), shifts in elements of the flattened phase planes (row strides ``qstrides``); the
    np.ndindex positions of the taps in group order; and the largest shift.
    """
    groups: list[tuple[int, int, Shape, Shape]] = []
    order: list[int] = []
    reach = 0
    for pi, phase in enumerate(np.ndindex(*g.strides)):
        axes = [
            [t for t in range(kk) if t * d % s == p]
            for p, s, d, kk in zip(phase, g.strides, g.dilations, g.kernel, strict=True)
        ]
        if not all(axes):
            continue
        spots = [
            [t * d // s for t in a] for a, s, d in zip(axes, g.strides, g.dilations, strict=True)
        ]
        base = sum(o[0] * q for o, q in zip(spots, qstrides, strict=True))
        steps = tuple(
            (o[1] - o[0]) * q if len(o) > 1 else 0 for o, q in zip(spots, qstrides, strict=True)
        )
        groups.append((pi, base, tuple(len(a) for a in axes), steps))
        order.extend(int(np.ravel_multi_index(t, g.kernel)) for t in itertools.product(*axes))
        reach = max(reach, sum(o[-1] * q for o, q in zip(spots, qstrides, strict=True)))
    return groups, order, reach


def depthwise(xshape: Shape, wshape: Shape, g: Geometry, group: int, dtype: Any) -> Run:
    """One input channel per group: per channel W (mult, K) @ its K shifted copies.

    The padded input is split into stride-phase planes and flattened, where a tap is a shift
    within one plane and the taps of one plane a regular grid of shifts: the K rows of the
    patch matrices of a block of channels take one strided copy per plane, an output element
    sitting where its window's first tap does (a "wide" output: a few junk columns per row,
    cropped at the end). One batched matmul (a matrix-vector product per channel) then sums
    the taps: two passes over K times the output, where multiplying and adding tap by tap
    takes 2K - 1 over short rows. Channels go in blocks whose patches stay in cache.
    Half-precision taps are summed in float32 and rounded once, as a (numpy half) matmul
    sums them.
    """
    if np.dtype(dtype) == np.float16:
        wider = depthwise(xshape, wshape, g, group, np.float32)
        return lambda x, w: wider(x.astype(np.float32), w.astype(np.float32)).astype(dtype)
    dtype = np.dtype(dtype)
    n, c = xshape[:2]
    mult = wshape[0] // group
    size = padded_spatial(xshape, g)
    qshape = tuple(-(-p // s) for p, s in zip(size, g.strides, strict=True))
    qstrides = row_strides(qshape)
    q, rows, k = math.prod(qshape), n * c, math.prod(g.kernel)
    grids, order, reach = _tap_grids(g, qstrides)
    perm = None if order == list(range(k)) else np.array(order)
    phases = math.prod(g.strides)
    block = balanced_band(rows, _BLOCK_BYTES // (k * q * dtype.itemsize))
    # The planes, then ``reach`` zeros: the last channel's junk columns read past its plane.
    layout = Layout(
        ((phases * rows * q + reach,), dtype), ((k, block * q), dtype), ((rows, mult, q), dtype)
    )
    fills = _plane_fills(xshape, g)
    # channels whose input planes fit in cache: all of a block's phases are cut from X while
    # it is there (a strided copy over the whole tensor re-read X from memory per phase)
    chans = max(1, _FILL_BYTES // (math.prod(xshape[2:]) * dtype.itemsize))
    crop = ((n, c * mult, *g.out), (c * mult * q, q, *qstrides))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
        flat, buf, y = layout.carve()
        flat[phases * rows * q :].fill(0)
        planes = flat[: phases * rows * q].reshape(phases, n, c, *qshape)
        for b in range(n):
            for c0 in range(0, c, chans):
                cs = slice(c0, c0 + chans)
                planes[:, b, cs].fill(0)
                for i, dst, src in fills:
                    into: Index = (i, b, cs, *dst)
                    part: Index = (b, cs, *src)
                    planes[into] = x[part]
        wk = w.reshape(c, mult, k)
        if perm is not None:
            wk = wk[:, :, perm]
        if n > 1:
            wk = np.tile(wk, (n, 1, 1))  # one row of weights per (image, channel): tiny
        for r0 in range(0, rows, block):
            r1 = min(rows, r0 + block)
            span, t = (r1 - r0) * q, 0
            for pi, base, shape, steps in grids:
                view = strided_view(flat, (pi * rows + r0) * q + base, (*shape, span), (*steps, 1))
                taps = math.prod(shape)
                np.copyto(buf[t : t + taps, :span].reshape(*shape, span), view)
                t += taps
            cols = buf[:, :span].reshape(k, r1 - r0, q).transpose(1, 0, 2)
            np.matmul(wk[r0:r1], cols, out=y[r0:r1])
        return cropped_copy(y, *crop)

    return run
