"""Conv and ConvTranspose: BLAS matmuls over im2col matrices, depthwise as a tap loop."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from xocview.executor.ops.spatial import (
    Geometry,
    Index,
    geometry,
    normalise,
    pad_spatial,
    transpose_pads,
)
from xocview.executor.registry import kernel

__all__ = ["conv", "conv_transpose"]

Shape = tuple[int, ...]

# Patch matrix bytes per band of output rows: about half an L2 cache.
_BAND_BYTES = 1 << 19
# ... but never so few columns that BLAS runs a skinny, inefficient product.
_MIN_BAND_COLUMNS = 1024


def _check_kernel(w: np.ndarray, kernel_shape: Sequence[int] | None) -> tuple[int, ...]:
    """The kernel's spatial shape, read from W (the attribute may be absent but must agree)."""
    shape = tuple(int(k) for k in w.shape[2:])
    if kernel_shape is not None and len(kernel_shape) > 0 and tuple(kernel_shape) != shape:
        raise ValueError(f"kernel_shape {list(kernel_shape)} disagrees with W's shape {w.shape}")
    return shape


def _pointwise(x: np.ndarray, w: np.ndarray, g: Geometry, group: int) -> np.ndarray:
    """1x1 unpadded kernel: one (batched over groups) matmul on X as it lies in memory."""
    if any(s != 1 for s in g.strides):
        every: Index = (Ellipsis, *(slice(None, None, s) for s in g.strides))
        x = x[every]
    n, c = x.shape[:2]
    m = w.shape[0]
    xr = np.ascontiguousarray(x).reshape(n, group, c // group, -1)
    wr = w.reshape(group, m // group, c // group)
    return np.matmul(wr, xr).reshape((n, m, *g.out))


def _im2col(xp: np.ndarray, g: Geometry, rows: slice) -> np.ndarray:
    """(N, C, *kernel, rows, *out[1:]) patches copied once from a strided view of padded X."""
    sub = xp[:, :, rows.start * g.strides[0] :]
    xs = sub.strides[2:]
    shape = (*xp.shape[:2], *g.kernel, rows.stop - rows.start, *g.out[1:])
    strides = (
        *sub.strides[:2],
        *(s * d for s, d in zip(xs, g.dilations, strict=True)),
        *(s * t for s, t in zip(xs, g.strides, strict=True)),
    )
    return np.ascontiguousarray(as_strided(sub, shape, strides, writeable=False))


def _general(x: np.ndarray, w: np.ndarray, g: Geometry, group: int) -> np.ndarray:
    """im2col then W (M, C*K) @ cols (C*K, OH*OW), batched over groups, into Y in place.

    Large outputs go in bands of output rows so that each band's patch matrix stays in cache;
    matmul writes each band straight into its slice of Y.
    """
    n, c = x.shape[:2]
    m = w.shape[0]
    xp = pad_spatial(x, g, 0)
    rest = math.prod(g.out[1:])
    depth = c * math.prod(g.kernel)
    band = max(-(-_MIN_BAND_COLUMNS // rest), _BAND_BYTES // max(1, n * depth * rest * x.itemsize))
    y = np.empty((n, group, m // group, g.out[0] * rest), dtype=np.result_type(x, w))
    wr = w.reshape(group, m // group, -1)
    for r0 in range(0, g.out[0], band):
        r1 = min(g.out[0], r0 + band)
        cols = _im2col(xp, g, slice(r0, r1)).reshape(n, group, -1, (r1 - r0) * rest)
        np.matmul(wr, cols, out=y[..., r0 * rest : r1 * rest])
    return y.reshape((n, m, *g.out))


def _phase_planes(x: np.ndarray, g: Geometry, last: bool) -> tuple[np.ndarray, list[Shape]]:
    """The zero-padded input split by stride phase, and the phases.

    Returns (phases, N, *Q, C) if ``last`` (channels innermost) else (phases, N, C, *Q), both
    contiguous. In the plane of phase ``p`` element ``q`` is padded-input element
    ``p + stride * q``, so a strided tap becomes a plain shift within one plane.
    """
    size = [n + b + e for n, b, e in zip(x.shape[2:], g.begin, g.end, strict=True)]
    q = [-(-p // s) for p, s in zip(size, g.strides, strict=True)]
    phases = list(np.ndindex(*g.strides))
    n, c = x.shape[:2]
    if last:
        planes = np.zeros((len(phases), n, *q, c), dtype=x.dtype)
        logical = np.moveaxis(planes, -1, 2)
    else:
        planes = logical = np.zeros((len(phases), n, c, *q), dtype=x.dtype)
    for i, phase in enumerate(phases):
        src, dst = [], []
        for p, s, b, size_x in zip(phase, g.strides, g.begin, x.shape[2:], strict=True):
            q0 = max(0, -(-(b - p) // s))  # first plane index that lands inside X
            first = p + s * q0 - b
            src.append(slice(first, size_x, s))
            dst.append(slice(q0, q0 + len(range(first, size_x, s))))
        into: Index = (i, Ellipsis, *dst)
        part: Index = (Ellipsis, *src)
        logical[into] = x[part]
    return planes, phases


def _tap_offsets(g: Geometry, phases: list[Shape], qstrides: Shape) -> list[tuple[int, int]]:
    """(phase plane, flat shift) of every kernel tap, in np.ndindex order."""
    taps = []
    for tap in np.ndindex(*g.kernel):
        reach = [t * d for t, d in zip(tap, g.dilations, strict=True)]
        phase = tuple(r % s for r, s in zip(reach, g.strides, strict=True))
        off = sum(r // s * q for r, s, q in zip(reach, g.strides, qstrides, strict=True))
        taps.append((phases.index(phase), off))
    return taps


def _accumulate(
    views: list[np.ndarray], weights: list[np.ndarray], y: np.ndarray, tmp: np.ndarray
) -> None:
    """y = sum of views[i] * weights[i], in place, with one scratch array for the products."""
    for i, (view, wt) in enumerate(zip(views, weights, strict=True)):
        np.multiply(view, wt, out=y if i == 0 else tmp)
        if i:
            y += tmp


def _depthwise(x: np.ndarray, w: np.ndarray, g: Geometry, group: int) -> np.ndarray:
    """One input channel per group: accumulate w[:, tap] * shifted input over the kernel taps.

    Each tap is a contiguous shift of a flattened phase plane, so every multiply-add runs over
    long rows (a "wide" output with a few junk columns, cropped at the end). Small images put
    channels innermost so numpy's inner loop stays long. A matmul per channel would be a
    matrix-vector product after an im2col copy K times the input. Half-precision taps are summed
    in float32 and rounded once, as a (numpy half) matmul sums them.
    """
    dtype = np.result_type(x, w)
    if dtype == np.float16:
        return _depthwise(x.astype(np.float32), w.astype(np.float32), g, group).astype(dtype)
    n, c = x.shape[:2]
    mult = w.shape[0] // group
    padded = zip(x.shape[2:], g.begin, g.end, g.strides, strict=True)
    qshape = [-(-(size + b + e) // s) for size, b, e, s in padded]
    qstrides = tuple(math.prod(qshape[i + 1 :]) for i in range(len(qshape)))
    wide = sum((o - 1) * q for o, q in zip(g.out, qstrides, strict=True)) + 1
    last = wide < 4 * c
    planes, phases = _phase_planes(x, g, last)
    wk = w.reshape(c, mult, -1)
    if last:
        flat = planes.reshape(len(phases), n, -1, 1, c)
        y = np.empty((n, wide, mult, c), dtype=np.result_type(x, w))
        weights = list(np.ascontiguousarray(wk.transpose(2, 1, 0)))
    else:
        flat = planes.reshape(len(phases), n, c, 1, -1)
        y = np.empty((n, c, mult, wide), dtype=np.result_type(x, w))
        weights = list(np.ascontiguousarray(wk.transpose(2, 0, 1))[..., None])
    taps = _tap_offsets(g, phases, qstrides)
    views = [flat[p, :, o : o + wide] if last else flat[p, ..., o : o + wide] for p, o in taps]
    _accumulate(views, weights, y, np.empty_like(y))
    sn, s1, sm, s2 = y.strides
    sc, spot = (s2, s1) if last else (s1, s2)
    crop = as_strided(y, (n, c, mult, *g.out), (sn, sc, sm, *(q * spot for q in qstrides)))
    return np.ascontiguousarray(crop).reshape((n, c * mult, *g.out))


@kernel("Conv", since=1)
def conv(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """N-d grouped convolution (cross-correlation, as ONNX defines it), bias added in place.

    A W with one axis more than X is (group, filters / group, channels / group, *kernel), as
    LightNet stores it; its first two axes are merged into ONNX's layout.
    Raises ValueError when X's channels do not match W and group.
    """
    group = int(group)
    if w.ndim == x.ndim + 1 and w.shape[0] == group:
        w = w.reshape((w.shape[0] * w.shape[1], *w.shape[2:]))
    if x.shape[1] != w.shape[1] * group or w.shape[0] % group:
        raise ValueError(f"X {x.shape}, W {w.shape} and group {group} disagree on channels")
    kshape = _check_kernel(w, kernel_shape)
    g = geometry(
        x.shape[2:], kshape, strides=strides, dilations=dilations, pads=pads, auto_pad=auto_pad
    )
    if x.shape[0] == 0 or 0 in g.out:
        y = np.zeros((x.shape[0], w.shape[0], *g.out), dtype=np.result_type(x, w))
    elif w.shape[1] == 1 and group > 1:
        y = _depthwise(x, w, g, group)
    elif all(k == 1 for k in kshape) and not g.padded:
        y = _pointwise(x, w, g, group)
    else:
        y = _general(x, w, g, group)
    if b is not None:
        y += b.reshape((-1,) + (1,) * len(g.out))
    return y


def _scatter_taps(
    cols: np.ndarray, spatial: Sequence[int], begin: Sequence[int], out: Sequence[int], g: Geometry
) -> np.ndarray:
    """col2im: add each tap's (N, M, *in) slab into a strided slice of the full output.

    Negative pads (an output_shape larger than the full result) extend it with zeros.
    """
    lo = [min(0, b) for b in begin]
    size = [
        max((n - 1) * s + (k - 1) * d + 1, b + o) - low
        for n, s, k, d, b, o, low in zip(
            spatial, g.strides, g.kernel, g.dilations, begin, out, lo, strict=True
        )
    ]
    buf = np.zeros((*cols.shape[:2], *size), dtype=cols.dtype)
    for tap in np.ndindex(*g.kernel):
        where = tuple(
            slice(t * d - low, t * d - low + (n - 1) * s + 1, s)
            for t, d, low, n, s in zip(tap, g.dilations, lo, spatial, g.strides, strict=True)
        )
        into: Index = (Ellipsis, *where)
        part: Index = (slice(None), slice(None), *tap)
        buf[into] += cols[part]
    crop = tuple(slice(b - low, b - low + o) for b, low, o in zip(begin, lo, out, strict=True))
    kept: Index = (Ellipsis, *crop)
    return np.ascontiguousarray(buf[kept])


@kernel("ConvTranspose", since=1)
def conv_transpose(
    x: np.ndarray,
    w: np.ndarray,
    b: np.ndarray | None = None,
    *,
    auto_pad: str = "NOTSET",
    dilations: Sequence[int] | None = None,
    group: int = 1,
    kernel_shape: Sequence[int] | None = None,
    output_padding: Sequence[int] | None = None,
    output_shape: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Transposed convolution: cols = W^T @ X per group (one BLAS call), then col2im by taps.

    Raises ValueError when X's channels do not match W and group.
    """
    group = int(group)
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    rank = len(spatial)
    if c != w.shape[0] or c % group:
        raise ValueError(f"X {x.shape}, W {w.shape} and group {group} disagree on channels")
    kshape = _check_kernel(w, kernel_shape)
    st, dl = normalise(strides, rank, 1), normalise(dilations, rank, 1)
    begin, out = transpose_pads(
        spatial,
        kshape,
        strides=st,
        dilations=dl,
        pads=pads,
        output_padding=normalise(output_padding, rank, 0),
        output_shape=output_shape,
        auto_pad=auto_pad,
    )
    if any(o <= 0 for o in out):
        raise ValueError(f"ConvTranspose output shape {out} is empty; check pads and strides")
    cg, m = c // group, w.shape[1] * group
    if n == 0:
        return np.zeros((0, m, *out), dtype=np.result_type(x, w))
    wr = w.reshape(group, cg, -1).transpose(0, 2, 1)
    cols = np.matmul(wr, x.reshape(n, group, cg, -1)).reshape((n, m, *kshape, *spatial))
    g = Geometry(kshape, st, dl, (0,) * rank, (0,) * rank, tuple(spatial))
    y = _scatter_taps(cols, spatial, begin, out, g)
    if b is not None:
        y += b.reshape((-1,) + (1,) * rank)
    return y
