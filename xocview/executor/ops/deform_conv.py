"""DeformConv (opsets 19, 22): convolution whose kernel taps sample the input at learned
fractional offsets, bilinearly (multilinearly in N-D), with an optional per-tap mask."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.spatial import normalise
from xocview.executor.registry import kernel

__all__ = ["deform_conv"]

Shape = tuple[int, ...]


def _check(
    x: np.ndarray, w: np.ndarray, group: int, offset_group: int, kernel_shape: Sequence[int] | None
) -> Shape:
    """The kernel's spatial shape; raises ValueError when the channels, groups or ranks
    disagree."""
    if x.ndim < 3 or w.ndim != x.ndim:
        raise ValueError(f"DeformConv: X {x.shape} and W {w.shape} need one rank, 3 or more")
    c, m = x.shape[1], w.shape[0]
    for name, value in (("group", group), ("offset_group", offset_group)):
        if value < 1:
            raise ValueError(f"DeformConv: {name} {value} is not supported; expected 1 or more")
    if c != w.shape[1] * group or m % group:
        raise ValueError(f"DeformConv: X {x.shape}, W {w.shape} and group {group} disagree")
    if c % offset_group:
        raise ValueError(f"DeformConv: {c} channels do not split into {offset_group} offset groups")
    kshape = tuple(int(k) for k in w.shape[2:])
    if kernel_shape is not None and len(kernel_shape) and tuple(kernel_shape) != kshape:
        raise ValueError(
            f"DeformConv: kernel_shape {list(kernel_shape)} disagrees with W {w.shape}"
        )
    return kshape


def _out_shape(
    spatial: Shape, kshape: Shape, strides: Shape, dilations: Shape, pads: Shape
) -> Shape:
    """floor((size + pads - dilated kernel) / stride) + 1 per spatial axis."""
    rank = len(spatial)
    return tuple(
        (n + pads[i] + pads[i + rank] - (kshape[i] - 1) * dilations[i] - 1) // strides[i] + 1
        for i, n in enumerate(spatial)
    )


def _positions(
    offset: np.ndarray,
    kshape: Shape,
    out: Shape,
    strides: Shape,
    dilations: Shape,
    pads: Shape,
    work: np.dtype,
) -> np.ndarray:
    """Sampling coordinates (N, G, K, rank, P): each tap's place in the unpadded input plus
    its offset, P being the flattened output positions."""
    n, rank = offset.shape[0], len(kshape)
    k, p = math.prod(kshape), math.prod(out)
    off = offset.astype(work, copy=False).reshape(n, -1, k, rank, p)
    taps = np.indices(kshape).reshape(rank, k).T * np.asarray(dilations)  # (K, rank)
    grid = np.indices(out).reshape(rank, p) * np.asarray(strides)[:, None]  # (rank, P)
    base = taps[:, :, None] + grid[None] - np.asarray(pads[:rank])[None, :, None]
    return off + base.astype(work)


def _sample(xg: np.ndarray, pos: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Multilinear samples (N, G, Cg, K*P) of xg (N, G, Cg, *spatial) at ``pos`` (N, G, K,
    rank, P): one gather per corner of the enclosing cell, a corner outside the input counting
    as zero. The per-tap mask multiplies the corner weights."""
    n, g, cg = xg.shape[:3]
    spatial = xg.shape[3:]
    rank = len(spatial)
    flat = xg.reshape(n, g, cg, -1)
    low = np.floor(pos)
    frac = pos - low
    low_i = low.astype(np.int64)
    cols = np.zeros((n, g, cg, pos.shape[2] * pos.shape[4]), dtype=pos.dtype)
    for corner in itertools.product((0, 1), repeat=rank):
        index = np.zeros(low_i.shape[:3] + low_i.shape[4:], dtype=np.int64)
        weight = np.ones(index.shape, dtype=pos.dtype) if mask is None else mask.copy()
        inside = np.ones(index.shape, dtype=bool)
        for d, bit in enumerate(corner):
            at = low_i[:, :, :, d] + bit
            inside &= (at >= 0) & (at < spatial[d])
            index = index * spatial[d] + np.clip(at, 0, spatial[d] - 1)
            weight *= frac[:, :, :, d] if bit else 1 - frac[:, :, :, d]
        weight = np.where(inside, weight, 0).reshape(n, g, 1, -1)
        picked = np.take_along_axis(flat, index.reshape(n, g, 1, -1), axis=3)
        cols += weight * picked
    return cols


@kernel("DeformConv", since=19)
def deform_conv(
    x: np.ndarray,
    w: np.ndarray,
    offset: np.ndarray,
    b: np.ndarray | None = None,
    mask: np.ndarray | None = None,
    *,
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    offset_group: int = 1,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Y[n, o] = sum over c, taps of W[o, c, tap] * mask * X[n, c] sampled at the tap's place
    plus its offset; offset is (N, offset_group * K * rank, *out), mask (N, offset_group * K,
    *out), K the number of taps.

    The samples of every (channel, tap, output position) form an im2col matrix gathered
    once, in at least float32, then one matmul per group multiplies it by W.
    """
    if x.dtype.kind != "f" and x.dtype.name != "bfloat16":
        raise ValueError(f"DeformConv: input dtype {x.dtype} is not supported")
    group, offset_group = int(group), int(offset_group)
    kshape = _check(x, w, group, offset_group, kernel_shape)
    rank = len(kshape)
    st, dl = normalise(strides, rank, 1), normalise(dilations, rank, 1)
    pd = normalise(pads, 2 * rank, 0)
    out = _out_shape(x.shape[2:], kshape, st, dl, pd)
    n, c = x.shape[:2]
    k = math.prod(kshape)
    if offset.shape != (n, offset_group * k * rank, *out):
        raise ValueError(
            f"DeformConv: offset has shape {offset.shape}; expected "
            f"{(n, offset_group * k * rank, *out)}"
        )
    if mask is not None and mask.shape != (n, offset_group * k, *out):
        raise ValueError(
            f"DeformConv: mask has shape {mask.shape}; expected {(n, offset_group * k, *out)}"
        )
    m = w.shape[0]
    work = np.promote_types(x.dtype, np.float32)
    if n == 0 or c == 0 or 0 in out or 0 in x.shape[2:]:  # nothing to sample: zeros
        y = np.zeros((n, m, *out), dtype=work)
    else:
        pos = _positions(offset, kshape, out, st, dl, pd, work)
        taps = None if mask is None else mask.astype(work).reshape(n, offset_group, k, -1)
        xg = x.astype(work, copy=False).reshape(n, offset_group, c // offset_group, *x.shape[2:])
        cols = _sample(xg, pos, taps).reshape(n, group, (c // group) * k, -1)
        wr = w.astype(work, copy=False).reshape(group, m // group, -1)
        y = np.matmul(wr, cols).reshape(n, m, *out)
    if b is not None:
        y += b.astype(work, copy=False).reshape((-1,) + (1,) * rank)
    return y.astype(x.dtype, copy=False)
