"""Winograd F(2x2, 3x3) for Conv: 16 matmuls over 4x4 input tiles, 16 multiply-adds per 2x2
outputs where im2col spends 36 (float32, 3x3, unit stride and dilation, one group).

The transformed weights are cached by the identity of W, as long as W lives.
"""

from __future__ import annotations

import functools
import itertools
import threading
import weakref
from collections import deque
from typing import Any

import numpy as np

from xocview.executor.ops.conv_layout import Layout, Run, Shape, balanced_band
from xocview.executor.ops.spatial import Geometry, Index

__all__ = ["winograd", "winograd_pays"]

# Winograd's transformed input tiles per band (its whole working set is about 1.5 times more).
_WINOGRAD_BAND_BYTES = 1 << 21
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


# Past 80x80 outputs per image im2col's bands win (measured at 160x160 over C, M in 16..128:
# Winograd 1.05-2x slower, e.g. 41.7 ms against 28 ms for 96 -> 24 channels, an OCR
# detector's FPN): its transformed tiles of a band no longer stay in cache.
_LARGEST_PLANE = 80 * 80


def winograd_pays(xshape: Shape, xdtype: Any, wshape: Shape, wdtype: Any, g: Geometry) -> bool:
    """Whether F(2x2, 3x3) beats im2col (measured on one core over C, M in 8..128 and 14..160
    pixels a side): float32, 2-d, 3x3, unit stride and dilation; tiles that do not waste the
    saving on a ragged edge (7x7 outputs do); and enough work for its 16 transforms a tile:
    many input channels (its transforms replace im2col's nine copies of each), or more input
    channels than filters on a large image."""
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
    pixels = xshape[0] * g.out[0] * g.out[1]
    if g.out[0] * g.out[1] > _LARGEST_PLANE:
        return False
    return cost <= 0.6 and (
        (c >= 64 and (m >= 16 or pixels >= 784 or c >= 8 * m))
        or (c >= 32 and c >= 2 * m and pixels >= 784)
        or (c >= 16 and c >= m and pixels >= 3136)
    )


def winograd(xshape: Shape, wshape: Shape, g: Geometry) -> Run:
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
    bt = balanced_band(th, _WINOGRAD_BAND_BYTES // (16 * c * n * lw * dt.itemsize))
    band = n * bt * lw
    layout = Layout(
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
