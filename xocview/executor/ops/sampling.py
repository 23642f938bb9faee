"""Spatial sampling kernels: GridSample, AffineGrid, CenterCropPad and Col2Im."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["affine_grid", "center_crop_pad", "col2im", "grid_sample", "grid_sample_16"]

_PADDINGS = ("zeros", "border", "reflection")


def _working(dtype: np.dtype) -> np.dtype:
    """The dtype interpolation runs in: float16 and bfloat16 widen to float32, integers to
    float64."""
    if dtype.kind in "iu":
        return np.dtype(np.float64)
    return np.promote_types(dtype, np.float32)


# --- GridSample ----------------------------------------------------------------------------------


def _reflect(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Fold x into [lo, hi] by reflecting at the nearer border until it lies inside."""
    span = hi - lo
    if span <= 0:
        return np.full_like(x, lo)
    below = x < lo
    dx = np.where(below, lo - x, x - hi)
    n = np.floor(dx / span)
    r = dx - n * span
    even = n % 2 == 0
    inside_lo = np.where(even, lo + r, hi - r)  # folded from below
    inside_hi = np.where(even, hi - r, lo + r)  # folded from above
    out = np.where(below, inside_lo, np.where(x > hi, inside_hi, x))
    return out.astype(x.dtype, copy=False)


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    """Keys' cubic convolution weights (a = -0.75) of the taps at -1, 0, 1, 2 for offset t."""
    a = -0.75

    def near(s: np.ndarray) -> np.ndarray:  # |s| <= 1
        return ((a + 2) * s - (a + 3)) * s * s + 1

    def far(s: np.ndarray) -> np.ndarray:  # 1 < |s| < 2
        return ((a * s - 5 * a) * s + 8 * a) * s - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(
    x: np.ndarray, size: int, mode: str, padding: str, align_corners: bool
) -> list[tuple[np.ndarray, np.ndarray]]:
    """(index, weight) pairs along one axis for unnormalised coordinates x; the index is always
    valid, weights of zero-padded taps are zero."""
    lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    if mode == "nearest":
        x = np.rint(x)
    outside = (x < lo) | (x > hi)
    if padding == "border":
        x = np.where(outside, np.clip(x, 0, size - 1), x)
    elif padding == "reflection":
        x = np.where(outside, _reflect(x, lo, hi), x)
    if mode == "nearest":
        base = np.trunc(x)
        offsets, weights = [0], [np.ones_like(x)]
    else:
        base = np.floor(x)
        t = x - base
        if mode == "linear":
            offsets, weights = [0, 1], [1 - t, t]
        else:
            offsets, weights = [-1, 0, 1, 2], _cubic(t)
    out = []
    for off, w in zip(offsets, weights, strict=True):
        i = base + off
        if padding == "zeros":
            valid = (i >= 0) & (i < size)
            w = np.where(valid, w, 0)
            i = np.where(valid, i, 0)
        elif padding == "border":
            i = np.clip(i, 0, size - 1)
        else:
            i = np.trunc(_reflect(i, lo, hi))
            i = np.clip(i, 0, size - 1)
        out.append((i.astype(np.intp), w))
    return out


def _grid_sample(
    op: str, x: np.ndarray, grid: np.ndarray, mode: str, padding: str, align_corners: int
) -> np.ndarray:
    if padding not in _PADDINGS:
        raise ValueError(
            f"{op}: padding_mode {padding!r} is not supported; expected zeros, border or reflection"
        )
    k = x.ndim - 2
    if k < 1 or grid.shape != (x.shape[0], *grid.shape[1:-1], k) or grid.ndim != x.ndim:
        raise ValueError(
            f"{op}: grid has shape {grid.shape}; expected (N, D1, ..., D{k}, {k}) for X {x.shape}"
        )
    if grid.dtype.kind != "f" and grid.dtype.kind != "V":
        raise ValueError(f"{op}: grid dtype {grid.dtype} is not supported; expected a float type")
    if mode != "nearest" and x.dtype.kind not in "fiuV":
        raise ValueError(f"{op}: dtype {x.dtype} is not supported with mode {mode!r}")
    n, c = x.shape[:2]
    out_spatial = grid.shape[1:-1]
    if x.size == 0 or grid.size == 0:
        return np.zeros((n, c, *out_spatial), dtype=x.dtype)
    g = grid.astype(np.promote_types(grid.dtype, np.float32), copy=False)
    sizes = x.shape[2:]
    per_axis = []
    for axis, size in enumerate(sizes):
        u = g[..., k - 1 - axis]  # the grid lists x (the last axis) first
        coord = (u + 1) / 2 * (size - 1) if align_corners else ((u + 1) * size - 1) / 2
        per_axis.append(_taps(coord, size, mode, padding, bool(align_corners)))
    data = x if mode == "nearest" else x.astype(_working(x.dtype), copy=False)
    batch = np.arange(n).reshape((n,) + (1,) * len(out_spatial))
    acc: np.ndarray | None = None
    for combo in itertools.product(*per_axis):
        index = tuple(i for i, _ in combo)
        picked = _gather(data, batch, index)
        w = combo[0][1]
        for _, wi in combo[1:]:
            w = w * wi
        term = picked * w[..., None].astype(data.dtype, copy=False)
        acc = term if acc is None else acc + term
    assert acc is not None
    y = np.moveaxis(acc, -1, 1)
    if mode == "nearest":
        return np.ascontiguousarray(y)
    return y.astype(x.dtype)


def _gather(data: np.ndarray, batch: np.ndarray, index: tuple[np.ndarray, ...]) -> np.ndarray:
    """data[batch, :, *index] with the channel axis last: (N, *out_spatial, C)."""
    moved = np.moveaxis(data, 1, -1)  # (N, *spatial, C)
    key = (batch, *index)
    return np.asarray(moved[key])


@kernel("GridSample", since=16)
def grid_sample_16(
    x: np.ndarray,
    grid: np.ndarray,
    *,
    align_corners: int = 0,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
) -> np.ndarray:
    """GridSample-16: 4-D input only, modes bilinear, nearest and bicubic."""
    names = {"bilinear": "linear", "nearest": "nearest", "bicubic": "cubic"}
    if mode not in names:
        raise ValueError(
            f"GridSample: mode {mode!r} is not supported; expected bilinear, nearest or bicubic"
        )
    if x.ndim != 4:
        raise ValueError(f"GridSample: input of rank {x.ndim} is not supported; opset 16 takes 4-D")
    return _grid_sample("GridSample", x, grid, names[mode], padding_mode, align_corners)


@kernel("GridSample", since=20)
def grid_sample(
    x: np.ndarray,
    grid: np.ndarray,
    *,
    align_corners: int = 0,
    mode: str = "linear",
    padding_mode: str = "zeros",
) -> np.ndarray:
    """GridSample-20 and -22 (which adds only types): N-D input (N, C, D1, ..., Dk), a grid
    (N, H1, ..., Hk, k) of normalised coordinates in [-1, 1], modes linear, nearest and cubic.

    Out-of-range coordinates follow padding_mode as in the ONNX reference: border clamps,
    reflection folds back, zeros reads zeros. Nearest rounds half to even.
    """
    if mode not in ("linear", "nearest", "cubic"):
        raise ValueError(
            f"GridSample: mode {mode!r} is not supported; expected linear, nearest or cubic"
        )
    return _grid_sample("GridSample", x, grid, mode, padding_mode, align_corners)


# --- AffineGrid ----------------------------------------------------------------------------------


def _base_axis(size: int, align_corners: int) -> np.ndarray:
    """Normalised coordinates of the ``size`` pixel centres (corners when align_corners)."""
    if align_corners:
        return np.linspace(-1.0, 1.0, size) if size > 1 else np.full(size, -1.0)
    return (np.arange(size) * 2.0 + 1.0) / size - 1.0


@kernel("AffineGrid", since=20)
def affine_grid(theta: np.ndarray, size: np.ndarray, *, align_corners: int = 0) -> np.ndarray:
    """AffineGrid-20: theta (N, 2, 3) with size (N, C, H, W) gives a grid (N, H, W, 2);
    theta (N, 3, 4) with size (N, C, D, H, W) gives (N, D, H, W, 3). Each point is
    theta @ (x, y[, z], 1) for the base coordinates x along W, y along H, z along D."""
    dims = [int(s) for s in np.asarray(size).reshape(-1)]
    k = len(dims) - 2
    if k not in (2, 3):
        raise ValueError(f"AffineGrid: size {dims} is not supported; expected 4 or 5 values")
    if theta.shape != (dims[0], k, k + 1):
        raise ValueError(
            f"AffineGrid: theta has shape {theta.shape}; expected {(dims[0], k, k + 1)}"
        )
    if theta.dtype.kind not in "fV":
        raise ValueError(f"AffineGrid: dtype {theta.dtype} is not supported; expected a float type")
    spatial = dims[2:]
    axes = [_base_axis(s, align_corners) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # z/y/x order, like the spatial dims
    base = np.stack([*mesh[::-1], np.ones(spatial)], axis=-1)  # (*spatial, k + 1): x first
    work = np.promote_types(theta.dtype, np.float32)
    flat = base.reshape(-1, k + 1).astype(work)
    grid = np.einsum("pj,nij->npi", flat, theta.astype(work, copy=False))
    return grid.reshape(dims[0], *spatial, k).astype(theta.dtype)


# --- CenterCropPad -------------------------------------------------------------------------------


@kernel("CenterCropPad", since=18)
def center_crop_pad(
    input_data: np.ndarray, shape: np.ndarray, *, axes: Sequence[int] | None = None
) -> np.ndarray:
    """CenterCropPad-18: crop or zero-pad each of ``axes`` (all by default) around its centre
    to the length ``shape`` gives; an odd surplus goes to the end for both crops and pads."""
    rank = input_data.ndim
    lengths = [int(s) for s in np.asarray(shape).reshape(-1)]
    chosen = list(range(rank)) if axes is None else list(axes)
    for a in chosen:
        if not -rank <= a < rank:
            raise ValueError(f"CenterCropPad: axis {a} is out of range for rank {rank}")
    chosen = [a % rank for a in chosen]
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"CenterCropPad: axes {list(axes or [])} repeat an axis")
    if len(lengths) != len(chosen):
        raise ValueError(f"CenterCropPad: shape has {len(lengths)} values for {len(chosen)} axes")
    if any(n < 0 for n in lengths):
        raise ValueError(f"CenterCropPad: shape {lengths} has a negative length")
    out_shape = list(input_data.shape)
    src = [slice(None)] * rank
    dst = [slice(None)] * rank
    for a, want in zip(chosen, lengths, strict=True):
        have = input_data.shape[a]
        out_shape[a] = want
        if want < have:
            start = (have - want) // 2
            src[a] = slice(start, start + want)
        elif want > have:
            start = (want - have) // 2
            dst[a] = slice(start, start + have)
    out = np.zeros(out_shape, dtype=input_data.dtype)
    out[tuple(dst)] = input_data[tuple(src)]
    return out


# --- Col2Im --------------------------------------------------------------------------------------


def _ints(name: str, values: Sequence[int] | None, n: int, default: int) -> list[int]:
    if values is None:
        return [default] * n
    out = [int(v) for v in values]
    if len(out) != n:
        raise ValueError(f"Col2Im: {name} has {len(out)} values; expected {n}")
    return out


@kernel("Col2Im", since=18)
def col2im(
    input: np.ndarray,
    image_shape: np.ndarray,
    block_shape: np.ndarray,
    *,
    dilations: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    strides: Sequence[int] | None = None,
) -> np.ndarray:
    """Col2Im-18: input (N, C * prod(block_shape), L) of sliding blocks summed back into an
    image (N, C, *image_shape); overlapping blocks add, padded positions are dropped."""
    image = [int(v) for v in np.asarray(image_shape).reshape(-1)]
    block = [int(v) for v in np.asarray(block_shape).reshape(-1)]
    k = len(image)
    if len(block) != k or k == 0:
        raise ValueError(f"Col2Im: image_shape {image} and block_shape {block} differ in length")
    dil = _ints("dilations", dilations, k, 1)
    stride = _ints("strides", strides, k, 1)
    pad = _ints("pads", pads, 2 * k, 0)
    if input.ndim != 3:
        raise ValueError(f"Col2Im: input has shape {input.shape}; expected (N, C * K, L)")
    per_block = int(np.prod(block))
    if per_block <= 0 or input.shape[1] % per_block:
        raise ValueError(
            f"Col2Im: input dimension 1 ({input.shape[1]}) is not a multiple of {per_block}"
        )
    counts = [
        (image[i] + pad[i] + pad[k + i] - dil[i] * (block[i] - 1) - 1) // stride[i] + 1
        for i in range(k)
    ]
    if any(c <= 0 for c in counts) or int(np.prod(counts)) != input.shape[2]:
        raise ValueError(
            f"Col2Im: input has {input.shape[2]} blocks; the shapes give {counts} "
            f"= {int(np.prod(counts))}"
        )
    n, c = input.shape[0], input.shape[1] // per_block
    # Per axis, the image position of (block offset b, block number l): (block_i, count_i).
    pos = [
        (np.arange(block[i])[:, None] * dil[i] + np.arange(counts[i])[None, :] * stride[i]) - pad[i]
        for i in range(k)
    ]
    # Broadcast to (*block, *counts): block axes first, then block-number axes.
    full = []
    for i in range(k):
        shape = [1] * (2 * k)
        shape[i] = block[i]
        shape[k + i] = counts[i]
        full.append(pos[i].reshape(shape))
    coords = np.broadcast_arrays(*full)
    valid = np.ones(coords[0].shape, dtype=bool)
    for i in range(k):
        valid &= (coords[i] >= 0) & (coords[i] < image[i])
    flat = np.ravel_multi_index(tuple(np.where(valid, ci, 0) for ci in coords), image).reshape(-1)
    keep = valid.reshape(-1)
    cols = input.reshape(n, c, per_block * input.shape[2])[:, :, keep]
    out = np.zeros((int(np.prod(image)), n, c), dtype=input.dtype)  # scatter axis first
    np.add.at(out, flat[keep], np.moveaxis(cols, -1, 0))
    return np.moveaxis(out, 0, -1).reshape(n, c, *image)
