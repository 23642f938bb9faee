"""Conv and ConvTranspose: im2col and BLAS, Winograd F(2x2, 3x3), depthwise by shifted copies.

Conv picks a method per shape, and everything that depends only on the shapes, dtypes and
attributes is worked out once and cached (a model calls the same few shapes pass after pass,
and on small tensors that Python work is a large part of the time):

- a 1x1 kernel without padding is one matmul on X as it lies, batched over groups;
- a depthwise kernel (one input channel per group) is a matrix-vector product per channel,
  W (K) @ its K shifted copies of the padded input;
- a 3x3 kernel with unit stride and dilation, one group and channels enough runs Winograd's
  F(2x2, 3x3): 16 matmuls over 4x4 input tiles, 16 multiply-adds per 2x2 outputs where
  im2col spends 36;
- unit stride with few filters: im2col over the flattened padded input ("wide", long copies);
- anything else: im2col, one matmul per band of output rows.

The depthwise method lives in conv_depthwise, Winograd in conv_winograd, and the scratch and
layout helpers they share with im2col in conv_layout.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from xocview.executor.ops.conv_depthwise import depthwise
from xocview.executor.ops.conv_layout import (
    Layout,
    Run,
    Shape,
    balanced_band,
    cropped_copy,
    padded_spatial,
    row_strides,
    strided_view,
    zero_padded,
)
from xocview.executor.ops.conv_winograd import winograd, winograd_pays
from xocview.executor.ops.spatial import (
    Geometry,
    Index,
    geometry,
    normalise,
    transpose_pads,
)
from xocview.executor.registry import kernel

__all__ = ["conv", "conv_transpose"]

# Working-set bytes per band of im2col patches: about an L2 cache, so that what one step
# writes the next reads from cache.
_BAND_BYTES = 1 << 20
# ... but never so few im2col columns that BLAS runs a skinny, inefficient product.
_MIN_BAND_COLUMNS = 256


def _check_kernel(wshape: Shape, kernel_shape: Sequence[int] | None) -> tuple[int, ...]:
    """The kernel's spatial shape, read from W (the attribute may be absent but must agree)."""
    shape = tuple(int(k) for k in wshape[2:])
    if kernel_shape is not None and len(kernel_shape) > 0 and tuple(kernel_shape) != shape:
        raise ValueError(f"kernel_shape {list(kernel_shape)} disagrees with W's shape {wshape}")
    return shape


def _pointwise(xshape: Shape, wshape: Shape, g: Geometry, group: int) -> Run:
    """1x1 unpadded kernel: one (batched over groups) matmul on X as it lies in memory."""
    n, c = xshape[:2]
    m = wshape[0]
    every: Index | None = None
    if any(s != 1 for s in g.strides):
        every = (Ellipsis, *(slice(None, None, s) for s in g.strides))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        if every is not None:
            x = x[every]
        xr = np.ascontiguousarray(x).reshape(n, group, c // group, -1)
        wr = w.reshape(group, m // group, c // group)
        return np.matmul(wr, xr).reshape((n, m, *g.out))

    return run


def _im2col_view(xp: np.ndarray, g: Geometry, rows: slice) -> np.ndarray:
    """(N, C, *kernel, rows, *out[1:]) patches of padded X, as a strided view (no copy)."""
    sub = xp[:, :, rows.start * g.strides[0] :]
    xs = sub.strides[2:]
    shape = (*xp.shape[:2], *g.kernel, rows.stop - rows.start, *g.out[1:])
    strides = (
        *sub.strides[:2],
        *(s * d for s, d in zip(xs, g.dilations, strict=True)),
        *(s * t for s, t in zip(xs, g.strides, strict=True)),
    )
    return as_strided(sub, shape, strides, writeable=False)


def _general(xshape: Shape, xdtype: Any, wshape: Shape, g: Geometry, group: int, dtype: Any) -> Run:
    """im2col then W (M, C*K) @ cols (C*K, OH*OW), batched over groups, into Y in place.

    The output goes in bands of rows whose patch matrix (about ``_BAND_BYTES``) stays in cache
    between the copy that builds it and BLAS reading it; one buffer serves every band and
    matmul writes each band straight into its slice of Y.
    """
    n, c = xshape[:2]
    m = wshape[0]
    rest = math.prod(g.out[1:])
    row_size = n * c * math.prod(g.kernel) * rest
    item = np.dtype(xdtype).itemsize
    band = balanced_band(
        g.out[0], max(-(-_MIN_BAND_COLUMNS // rest), _BAND_BYTES // (row_size * item))
    )
    padded = (n, c, *padded_spatial(xshape, g)) if g.padded else (0,)
    layout = Layout((padded, xdtype), ((band * row_size,), xdtype))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        pad, buf = layout.carve()
        xp = zero_padded(x, g, pad) if g.padded else x
        y = np.empty((n, group, m // group, g.out[0] * rest), dtype=dtype)
        wr = w.reshape(group, m // group, -1)
        for r0 in range(0, g.out[0], band):
            r1 = min(g.out[0], r0 + band)
            view = _im2col_view(xp, g, slice(r0, r1))
            cols = buf[: view.size].reshape(view.shape)
            np.copyto(cols, view)
            mat = cols.reshape(n, group, -1, (r1 - r0) * rest)
            np.matmul(wr, mat, out=y[..., r0 * rest : r1 * rest])
        return y.reshape((n, m, *g.out))

    return run


def _wide(xshape: Shape, xdtype: Any, wshape: Shape, g: Geometry, group: int, dtype: Any) -> Run:
    """Unit stride: im2col over the flattened padded input, then crop.

    Column j of the patch matrix is the window whose first tap is padded element j, so each
    patch row is one contiguous run (where _general copies a short run per output row) and
    the matmul also computes a few junk columns where a window would wrap to the next row,
    cropped from Y at the end. In bands of output rows, like _general.
    """
    n, c = xshape[:2]
    m = wshape[0]
    spatial = padded_spatial(xshape, g)
    qstrides = row_strides(spatial)
    q0 = qstrides[0]
    wide = sum((o - 1) * q for o, q in zip(g.out, qstrides, strict=True)) + 1
    depth = c * math.prod(g.kernel)
    item = np.dtype(xdtype).itemsize
    band = balanced_band(
        g.out[0], max(-(-_MIN_BAND_COLUMNS // q0), _BAND_BYTES // (n * depth * q0 * item))
    )
    layout = Layout(
        ((n, c, *spatial) if g.padded else (0,), xdtype),
        ((n * depth * band * q0,), xdtype),
        ((n, group, m // group, g.out[0] * q0), dtype),
    )
    image = (c * math.prod(spatial), math.prod(spatial))  # element strides of N and C
    shifts = tuple(d * q for d, q in zip(g.dilations, qstrides, strict=True))
    crop = ((n, m, *g.out), (m * g.out[0] * q0, g.out[0] * q0, *qstrides))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        pad, buf, yw = layout.carve()
        xp = zero_padded(x, g, pad) if g.padded else np.ascontiguousarray(x)
        wr = w.reshape(group, m // group, -1)
        for r0 in range(0, g.out[0], band):
            j0, j1 = r0 * q0, min((r0 + band) * q0, wide)
            view = strided_view(xp, j0, (n, c, *g.kernel, j1 - j0), (*image, *shifts, 1))
            cols = buf[: view.size].reshape(view.shape)
            np.copyto(cols, view)
            np.matmul(wr, cols.reshape(n, group, -1, j1 - j0), out=yw[..., j0:j1])
        return cropped_copy(yw, *crop)

    return run


def _attr(values: Sequence[int] | None) -> tuple[int, ...] | None:
    """An attribute list as a hashable tuple (None stays None)."""
    return None if values is None else tuple(int(v) for v in values)


@functools.lru_cache(maxsize=1024)
def _prepare(
    xshape: Shape,
    xdtype: np.dtype[Any],
    wshape: Shape,
    wdtype: np.dtype[Any],
    group: int,
    auto_pad: str | bytes,
    dilations: Shape | None,
    kernel_shape: Shape | None,
    pads: Shape | None,
    strides: Shape | None,
) -> Run:
    """The method for these shapes, dtypes and attributes, with all it can work out ahead.

    Raises ValueError when X's channels do not match W and group, or for bad attributes.
    """
    if xshape[1] != wshape[1] * group or wshape[0] % group:
        raise ValueError(f"X {xshape}, W {wshape} and group {group} disagree on channels")
    kshape = _check_kernel(wshape, kernel_shape)
    g = geometry(
        xshape[2:], kshape, strides=strides, dilations=dilations, pads=pads, auto_pad=auto_pad
    )
    dtype = np.result_type(xdtype, wdtype)
    n, c = xshape[:2]
    m = wshape[0]
    if n == 0 or c == 0 or m == 0 or 0 in g.out:
        return lambda x, w: np.zeros((n, m, *g.out), dtype=dtype)
    if wshape[1] == 1 and group > 1:
        return depthwise(xshape, wshape, g, group, dtype)
    if all(k == 1 for k in kshape) and not g.padded:
        return _pointwise(xshape, wshape, g, group)
    if group == 1 and winograd_pays(xshape, xdtype, wshape, wdtype, g):
        return winograd(xshape, wshape, g)
    if all(s == 1 for s in g.strides) and (4 * m <= c or 8 <= c < 64):
        # Few filters, or a few channels each, at unit stride: the matmul is cheap next to
        # im2col's short copies; _wide's are long (measured: 1.1-1.6x faster below 64
        # channels; with fewer than 8, as an image's first layer, im2col's rows are longer).
        return _wide(xshape, xdtype, wshape, g, group, dtype)
    return _general(xshape, xdtype, wshape, g, group, dtype)


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
    run = _prepare(
        x.shape,
        x.dtype,
        w.shape,
        w.dtype,
        group,
        auto_pad,
        _attr(dilations),
        _attr(kernel_shape),
        _attr(pads),
        _attr(strides),
    )
    y = run(x, w)
    if b is not None:
        y += b.reshape((-1,) + (1,) * (y.ndim - 2))
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
    kshape = _check_kernel(w.shape, kernel_shape)
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
