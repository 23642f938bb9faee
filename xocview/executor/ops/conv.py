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

Scratch arrays come from a buffer kept per thread between calls: a fresh large array costs a
page fault per page on first touch, which can take as long as the convolution itself.
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from xocview.executor.ops.spatial import (
    Geometry,
    Index,
    geometry,
    normalise,
    transpose_pads,
)
from xocview.executor.registry import kernel

__all__ = ["conv", "conv_transpose"]

Shape = tuple[int, ...]
# A prepared Conv: (X, W) -> Y without the bias; made once per shapes, dtypes and attributes.
_Run = Callable[[np.ndarray, np.ndarray], np.ndarray]

# Working-set bytes per band (im2col patches, Winograd tiles) or per block of depthwise
# channels: about an L2 cache, so that what one step writes the next reads from cache.
_BAND_BYTES = 1 << 20
# ... but never so few im2col columns that BLAS runs a skinny, inefficient product.
_MIN_BAND_COLUMNS = 256
# Winograd's transformed input tiles per band (its whole working set is about 1.5 times more).
_WINOGRAD_BAND_BYTES = 1 << 21
# Scratch kept between calls, per thread; a larger request gets fresh memory instead.
_SCRATCH_LIMIT = 1 << 26
_ALIGN = 64


class _Scratch(threading.local):
    buf: np.ndarray | None = None
    base = 0  # first byte of buf on an _ALIGN boundary


_SCRATCH = _Scratch()


class _Layout:
    """Where a plan's scratch arrays lie in the per-thread buffer, worked out once."""

    __slots__ = ("placed", "total")

    def __init__(self, *specs: tuple[Shape, Any]) -> None:
        at, placed = 0, []
        for shape, dt in specs:
            size = math.prod(shape) * np.dtype(dt).itemsize
            placed.append((at, size, tuple(shape), np.dtype(dt)))
            at += -(-size // _ALIGN) * _ALIGN
        self.placed = tuple(placed)
        self.total = at + _ALIGN

    def carve(self) -> list[np.ndarray]:
        """The arrays, uninitialised; valid until this thread's next carve: never return them."""
        if self.total > _SCRATCH_LIMIT:
            return [np.empty(shape, dt) for _, _, shape, dt in self.placed]
        buf = _SCRATCH.buf
        if buf is None or buf.size < self.total:
            buf = _SCRATCH.buf = np.empty(self.total, np.uint8)
            _SCRATCH.base = -buf.ctypes.data % _ALIGN
        base = _SCRATCH.base
        return [
            buf[base + at : base + at + size].view(dt).reshape(shape)
            for at, size, shape, dt in self.placed
        ]


def _check_kernel(wshape: Shape, kernel_shape: Sequence[int] | None) -> tuple[int, ...]:
    """The kernel's spatial shape, read from W (the attribute may be absent but must agree)."""
    shape = tuple(int(k) for k in wshape[2:])
    if kernel_shape is not None and len(kernel_shape) > 0 and tuple(kernel_shape) != shape:
        raise ValueError(f"kernel_shape {list(kernel_shape)} disagrees with W's shape {wshape}")
    return shape


def _row_strides(shape: Shape) -> Shape:
    """Element strides of a C-contiguous array of this shape."""
    return tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))


def _padded_spatial(xshape: Shape, g: Geometry) -> Shape:
    return tuple(n + b + e for n, b, e in zip(xshape[2:], g.begin, g.end, strict=True))


def _padded(x: np.ndarray, g: Geometry, into: np.ndarray) -> np.ndarray:
    """X with the geometry's zero padding around its spatial axes, written into ``into``."""
    into.fill(0)
    inner: Index = (
        Ellipsis,
        *(slice(b, b + n) for b, n in zip(g.begin, x.shape[2:], strict=True)),
    )
    into[inner] = x
    return into


def _view(base: np.ndarray, start: int, shape: Shape, strides: Shape) -> np.ndarray:
    """The strided view of C-contiguous ``base`` at element ``start`` (strides in elements);
    numpy checks that it stays inside ``base``. A tenth of as_strided's cost."""
    item = base.itemsize
    return np.ndarray(shape, base.dtype, base, start * item, tuple(s * item for s in strides))


def _crop(y: np.ndarray, shape: Shape, strides: Shape) -> np.ndarray:
    """A fresh C-contiguous copy of a strided view of scratch ``y`` (a copy even when the view
    is contiguous: scratch must not escape)."""
    return np.array(_view(y, 0, shape, strides), order="C")


def _pointwise(xshape: Shape, wshape: Shape, g: Geometry, group: int) -> _Run:
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


def _bands(total: int, per: int) -> int:
    """``per`` evened out so that the bands over ``total`` are (nearly) equal."""
    per = max(1, min(total, per))
    return -(-total // -(-total // per))


def _general(
    xshape: Shape, xdtype: Any, wshape: Shape, g: Geometry, group: int, dtype: Any
) -> _Run:
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
    band = _bands(g.out[0], max(-(-_MIN_BAND_COLUMNS // rest), _BAND_BYTES // (row_size * item)))
    padded = (n, c, *_padded_spatial(xshape, g)) if g.padded else (0,)
    layout = _Layout((padded, xdtype), ((band * row_size,), xdtype))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        pad, buf = layout.carve()
        xp = _padded(x, g, pad) if g.padded else x
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


def _wide(xshape: Shape, xdtype: Any, wshape: Shape, g: Geometry, group: int, dtype: Any) -> _Run:
    """Unit stride: im2col over the flattened padded input, then crop.

    Column j of the patch matrix is the window whose first tap is padded element j, so each
    patch row is one contiguous run (where _general copies a short run per output row) and
    the matmul also computes a few junk columns where a window would wrap to the next row,
    cropped from Y at the end. In bands of output rows, like _general.
    """
    n, c = xshape[:2]
    m = wshape[0]
    spatial = _padded_spatial(xshape, g)
    qstrides = _row_strides(spatial)
    q0 = qstrides[0]
    wide = sum((o - 1) * q for o, q in zip(g.out, qstrides, strict=True)) + 1
    depth = c * math.prod(g.kernel)
    item = np.dtype(xdtype).itemsize
    band = _bands(
        g.out[0], max(-(-_MIN_BAND_COLUMNS // q0), _BAND_BYTES // (n * depth * q0 * item))
    )
    layout = _Layout(
        ((n, c, *spatial) if g.padded else (0,), xdtype),
        ((n * depth * band * q0,), xdtype),
        ((n, group, m // group, g.out[0] * q0), dtype),
    )
    image = (c * math.prod(spatial), math.prod(spatial))  # element strides of N and C
    shifts = tuple(d * q for d, q in zip(g.dilations, qstrides, strict=True))
    crop = ((n, m, *g.out), (m * g.out[0] * q0, g.out[0] * q0, *qstrides))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        pad, buf, yw = layout.carve()
        xp = _padded(x, g, pad) if g.padded else np.ascontiguousarray(x)
        wr = w.reshape(group, m // group, -1)
        for r0 in range(0, g.out[0], band):
            j0, j1 = r0 * q0, min((r0 + band) * q0, wide)
            view = _view(xp, j0, (n, c, *g.kernel, j1 - j0), (*image, *shifts, 1))
            cols = buf[: view.size].reshape(view.shape)
            np.copyto(cols, view)
            np.matmul(wr, cols.reshape(n, group, -1, j1 - j0), out=yw[..., j0:j1])
        return _crop(yw, *crop)

    return run


# Winograd F(2x2, 3x3): Y = A^T [(G W G^T) * (B^T D B)] A over 4x4 input tiles D (stride 2).
_WINOGRAD_G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]])
# Transformed weights by the identity of W (a model's weights are the same arrays pass after
# pass, and the executor never writes into an array it hands a kernel). An entry goes when its
# W is freed; when the cache is full a new W is not cached (a model that runs its layers in a
# cycle larger than the cache then still hits on part of them, where evicting the least
# recently used entry would miss on every one).
_WINOGRAD_CACHE: dict[int, tuple[weakref.ref[np.ndarray], np.ndarray]] = {}
_WINOGRAD_CACHE_BYTES = 1 << 26
_WINOGRAD_LOCK = threading.Lock()
# Keys whose W was freed while the cache was busy (a weak reference's callback may run in the
# middle of anything, this thread's own cache update included): dropped at the next lookup.
_WINOGRAD_FREED: deque[int] = deque()


def _winograd_drop(key: int) -> None:
    """Forget ``key`` if its W is gone (the caller holds the lock)."""
    entry = _WINOGRAD_CACHE.get(key)
    if entry is not None and entry[0]() is None:
        del _WINOGRAD_CACHE[key]


def _winograd_freed(key: int, _: object = None) -> None:
    """Weak-reference callback: drop the entry now if the cache is free, else later."""
    if _WINOGRAD_LOCK.acquire(blocking=False):
        try:
            _winograd_drop(key)
        finally:
            _WINOGRAD_LOCK.release()
    else:
        _WINOGRAD_FREED.append(key)


def _winograd_weights(w: np.ndarray) -> np.ndarray:
    """U = G W G^T as (16, M, C), tap (a, b) of the transformed 4x4 kernel first.

    In float64, rounded once. Cached by identity (a fresh array at a reused address is not
    mistaken for the old one: the entry holds a weak reference and is checked against it).
    """
    key = id(w)
    with _WINOGRAD_LOCK:
        while _WINOGRAD_FREED:
            _winograd_drop(_WINOGRAD_FREED.popleft())
        hit = _WINOGRAD_CACHE.get(key)
        if hit is not None and hit[0]() is w:
            return hit[1]
    m, c = w.shape[:2]
    gg = np.kron(_WINOGRAD_G, _WINOGRAD_G)  # (16, 9)
    u = (gg @ w.reshape(m * c, 9).T.astype(np.float64)).astype(w.dtype).reshape(16, m, c)
    ref = weakref.ref(w, functools.partial(_winograd_freed, key))
    with _WINOGRAD_LOCK:
        held = sum(entry[1].nbytes for entry in _WINOGRAD_CACHE.values() if entry[0]() is not None)
        if held + u.nbytes <= _WINOGRAD_CACHE_BYTES:
            _WINOGRAD_CACHE[key] = (ref, u)
    return u


def _winograd_pays(xshape: Shape, xdtype: Any, wshape: Shape, wdtype: Any, g: Geometry) -> bool:
    """Whether F(2x2, 3x3) beats im2col (measured on one core): float32, 2-d, 3x3, unit stride
    and dilation; tiles that do not waste the saving on a ragged edge (7x7 outputs do); and
    channels and filters enough that 16 matmuls of depth C run well."""
    if (
        len(xshape) != 4
        or np.dtype(xdtype) != np.float32
        or np.dtype(wdtype) != np.float32
        or g.kernel != (3, 3)
        or g.strides != (1, 1)
        or g.dilations != (1, 1)
    ):
        return False
    m, c = wshape[:2]
    th, tw = -(-g.out[0] // 2), -(-g.out[1] // 2)
    cost = 16 * th * (tw + 1) / (9 * g.out[0] * g.out[1])  # multiplies per im2col multiply
    return cost <= 0.6 and c >= 32 and m >= 16 and (c >= 64 or xshape[0] * th * tw >= 100)


def _winograd(xshape: Shape, wshape: Shape, g: Geometry) -> _Run:
    """F(2x2, 3x3) Winograd convolution (float32, one group), in bands of tile rows.

    The zero-padded input is split into its four (row, column) parity planes, so that a tile's
    16 inputs are plain shifts within them. Tiles are laid out "wide", tw + 1 per tile row
    (the last junk), so that every transform is one ufunc call over contiguous memory: a shift
    by one element along a flattened row is a shift by one tile. Per band: B^T D B (8 calls),
    16 matmuls (M, C) @ (C, tiles), A^T [.] A (8 calls) into Z = (p, M, N, th, tw + 1, q);
    Y is Z with the row and column parities p, q interleaved (two copies).
    """
    n, c, h, wd = xshape
    m = wshape[0]
    oh, ow = g.out
    pt, pl = g.begin
    th, tw = -(-oh // 2), -(-ow // 2)
    lw = tw + 1
    dt = np.dtype(np.float32)
    bt = _bands(th, _WINOGRAD_BAND_BYTES // (16 * c * n * lw * dt.itemsize))
    band = n * bt * lw
    layout = _Layout(
        ((2, 2, c, n, th + 1, lw), dt),
        ((4, 2, c * band), dt),
        ((4, 4, c * band), dt),
        ((16, m, band), dt),
        ((2, 4, m * band), dt),
        ((2, m, n, th, lw, 2), dt),
    )
    # planes[r, s, :, :, i, j] = padded X[:, :, 2i + r, 2j + s]: the part of X in each plane.
    fills = []
    for pr, pc in itertools.product(range(2), range(2)):
        r0, c0 = (pr - pt) % 2, (pc - pl) % 2
        i0, j0 = (r0 + pt) // 2, (c0 + pl) // 2
        rows = min(len(range(r0, h, 2)), th + 1 - i0)
        cols = min(len(range(c0, wd, 2)), lw - j0)
        into: Index = (pr, pc, Ellipsis, slice(i0, i0 + rows), slice(j0, j0 + cols))
        part: Index = (Ellipsis, slice(r0, r0 + 2 * rows, 2), slice(c0, c0 + 2 * cols, 2))
        fills.append((into, part))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        u = _winograd_weights(w)
        planes, r, v, prod, s, z = layout.carve()
        planes.fill(0)
        xt = x.transpose(1, 0, 2, 3)
        for into, part in fills:
            planes[into] = xt[part]
        even, odd = planes[0], planes[1]  # row parity; each (column parity, C, N, th + 1, lw)
        for t0 in range(0, th, bt):
            t1 = min(th, t0 + bt)
            size = n * (t1 - t0) * lw
            # Rows, B^T: the tile's rows 2t .. 2t + 3 are even[t], odd[t], even[t+1], odd[t+1].
            rb = r[..., : c * size].reshape(4, 2, c, n, t1 - t0, lw)
            e0, e1 = even[..., t0:t1, :], even[..., t0 + 1 : t1 + 1, :]
            o0, o1 = odd[..., t0:t1, :], odd[..., t0 + 1 : t1 + 1, :]
            np.subtract(e0, e1, out=rb[0])
            np.add(o0, e1, out=rb[1])
            np.subtract(e1, o0, out=rb[2])
            np.subtract(o0, o1, out=rb[3])
            # Columns, B: column 2j + 2 of a parity is the next tile's column 2j, one to the right.
            flat, vb = r[..., : c * size], v[..., : c * size]
            a0, a1, b0, b1 = flat[:, 0, :-1], flat[:, 0, 1:], flat[:, 1, :-1], flat[:, 1, 1:]
            np.subtract(a0, a1, out=vb[:, 0, :-1])
            np.add(b0, a1, out=vb[:, 1, :-1])
            np.subtract(a1, b0, out=vb[:, 2, :-1])
            np.subtract(b0, b1, out=vb[:, 3, :-1])
            vb[..., -1] = 0  # the last (junk) tile has no right neighbour
            pb = prod[..., :size]
            np.matmul(u, vb.reshape(16, c, size), out=pb)
            # A^T on the left (output rows p), then A on the right (columns q), into Z's band.
            p4, sb = pb.reshape(4, 4, m * size), s[..., : m * size]
            np.add(p4[0], p4[1], out=sb[0])
            np.add(sb[0], p4[2], out=sb[0])
            np.subtract(p4[1], p4[2], out=sb[1])
            np.subtract(sb[1], p4[3], out=sb[1])
            s0, s1, s2, s3 = (sb[:, b].reshape(2, m, n, t1 - t0, lw) for b in range(4))
            z0, z1 = z[:, :, :, t0:t1, :, 0], z[:, :, :, t0:t1, :, 1]
            np.add(s0, s1, out=z0)
            np.add(z0, s2, out=z0)
            np.subtract(s1, s2, out=z1)
            np.subtract(z1, s3, out=z1)
        y = np.empty((n, m, oh, ow), dtype=dt)
        for p in range(2):
            rows = len(range(p, oh, 2))
            half = z[p, :, :, :rows, :tw, :].reshape(m, n, rows, 2 * tw)
            y[:, :, p::2, :] = half[..., :ow].transpose(1, 0, 2, 3)
        return y

    return run


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


def _depthwise(xshape: Shape, wshape: Shape, g: Geometry, group: int, dtype: Any) -> _Run:
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
        wider = _depthwise(xshape, wshape, g, group, np.float32)
        return lambda x, w: wider(x.astype(np.float32), w.astype(np.float32)).astype(dtype)
    dtype = np.dtype(dtype)
    n, c = xshape[:2]
    mult = wshape[0] // group
    size = _padded_spatial(xshape, g)
    qshape = tuple(-(-p // s) for p, s in zip(size, g.strides, strict=True))
    qstrides = _row_strides(qshape)
    q, rows, k = math.prod(qshape), n * c, math.prod(g.kernel)
    grids, order, reach = _tap_grids(g, qstrides)
    perm = None if order == list(range(k)) else np.array(order)
    phases = math.prod(g.strides)
    block = _bands(rows, _BAND_BYTES // (k * q * dtype.itemsize))
    # The planes, then ``reach`` zeros: the last channel's junk columns read past its plane.
    layout = _Layout(
        ((phases * rows * q + reach,), dtype), ((k, block * q), dtype), ((rows, mult, q), dtype)
    )
    fills: list[tuple[Index, Index]] = [
        ((i, Ellipsis, *dst), (Ellipsis, *src)) for i, dst, src in _plane_fills(xshape, g)
    ]
    crop = ((n, c * mult, *g.out), (c * mult * q, q, *qstrides))

    def run(x: np.ndarray, w: np.ndarray) -> np.ndarray:
        x, w = x.astype(dtype, copy=False), w.astype(dtype, copy=False)
        flat, buf, y = layout.carve()
        flat.fill(0)
        planes = flat[: phases * rows * q].reshape(phases, n, c, *qshape)
        for into, part in fills:
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
                view = _view(flat, (pi * rows + r0) * q + base, (*shape, span), (*steps, 1))
                taps = math.prod(shape)
                np.copyto(buf[t : t + taps, :span].reshape(*shape, span), view)
                t += taps
            cols = buf[:, :span].reshape(k, r1 - r0, q).transpose(1, 0, 2)
            np.matmul(wk[r0:r1], cols, out=y[r0:r1])
        return _crop(y, *crop)

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
) -> _Run:
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
        return _depthwise(xshape, wshape, g, group, dtype)
    if all(k == 1 for k in kshape) and not g.padded:
        return _pointwise(xshape, wshape, g, group)
    if group == 1 and _winograd_pays(xshape, xdtype, wshape, wdtype, g):
        return _winograd(xshape, wshape, g)
    if all(s == 1 for s in g.strides) and 4 * m <= c:
        # Few filters: the matmul is cheap next to im2col's short copies; _wide's are long.
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
