"""Indexing kernels: Slice, Gather*, Scatter*, Compress, NonZero and OneHot."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from xocview.executor.ops.shape import as_ints, axis_index
from xocview.executor.registry import kernel

_INDEX = np.int64


# --- Slice ----------------------------------------------------------------------------------------


def _bounds(start: int, end: int, step: int, dim: int) -> slice:
    """ONNX's clamped [start, end) with ``step`` as a Python slice.

    With a negative step the end clamps to -1, "before the first element", which a Python
    slice can only say as None. Raises ValueError for a zero step.
    """
    if step == 0:
        raise ValueError("Slice step must not be 0")
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        return slice(min(max(start, 0), dim), min(max(end, 0), dim), step)
    start = min(max(start, 0), dim - 1)
    end = min(max(end, -1), dim - 1)
    return slice(start, None if end < 0 else end, step)


def _slice(
    data: np.ndarray, starts: list[int], ends: list[int], axes: list[int], steps: list[int]
) -> np.ndarray:
    """A strided view of ``data``; INT64_MAX/MIN sentinels clamp like any other bound."""
    axes = axes or list(range(len(starts)))
    steps = steps or [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ValueError(f"Slice: starts {starts}, ends {ends}, axes {axes}, steps {steps} differ")
    where = [slice(None)] * data.ndim
    for start, end, axis, step in zip(starts, ends, axes, steps, strict=True):
        a = axis_index(axis, data.ndim)
        where[a] = _bounds(start, end, step, data.shape[a])
    return data[tuple(where)]


@kernel("Slice", since=1)
def slice_1(
    data: np.ndarray,
    *,
    axes: Sequence[int] | None = None,
    ends: Sequence[int] = (),
    starts: Sequence[int] = (),
) -> np.ndarray:
    """Before opset 10 starts, ends and axes are attributes and the step is 1."""
    return _slice(data, as_ints(starts), as_ints(ends), as_ints(axes), [])


@kernel("Slice", since=10)
def slice_(
    data: np.ndarray,
    starts: np.ndarray,
    ends: np.ndarray,
    axes: np.ndarray | None = None,
    steps: np.ndarray | None = None,
) -> np.ndarray:
    """From opset 10 starts, ends, axes and steps are inputs; steps may be negative."""
    return _slice(data, as_ints(starts), as_ints(ends), as_ints(axes), as_ints(steps))


# --- Gather family --------------------------------------------------------------------------------


def _checked(indices: np.ndarray, dim: int, op: str) -> np.ndarray:
    """Indices as intp after a bounds check (negative ones count from the end).

    Raises IndexError naming the op and the first bad index.
    """
    bad = (indices < -dim) | (indices >= dim)
    if bad.any():
        raise IndexError(f"{op}: index {indices[bad].flat[0]} is out of range for a dim of {dim}")
    return indices.astype(np.intp, copy=False)


@kernel("Gather", since=1)
def gather(data: np.ndarray, indices: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """``np.take`` along ``axis``; indices of any rank replace that axis."""
    axis = axis_index(axis, data.ndim)
    return np.take(data, _checked(indices, data.shape[axis], "Gather"), axis=axis)


def _along(indices: np.ndarray, axis: int) -> tuple[np.ndarray, ...]:
    """Open-mesh index with ``indices`` on ``axis``; the other dims may be shorter than data's."""
    mesh: list[np.ndarray] = list(np.indices(indices.shape, sparse=True))
    mesh[axis] = indices
    return tuple(mesh)


@kernel("GatherElements", since=11)
def gather_elements(data: np.ndarray, indices: np.ndarray, *, axis: int = 0) -> np.ndarray:
    """out[i][j][k] = data[i][indices[i][j][k]][k] for axis 1, and so on."""
    axis = axis_index(axis, data.ndim)
    return data[_along(_checked(indices, data.shape[axis], "GatherElements"), axis)]


def _nd_index(data_shape: Sequence[int], indices: np.ndarray, batch_dims: int, op: str) -> tuple:
    """Fancy index into data reshaped to (batch, ...) for GatherND/ScatterND style indices."""
    b = int(batch_dims)
    if not 0 <= b < min(len(data_shape), indices.ndim):
        raise ValueError(
            f"{op}: batch_dims {b} for data of rank {len(data_shape)} and indices of rank "
            f"{indices.ndim}; expected 0 or more, below both ranks"
        )
    k = indices.shape[-1]
    if not 1 <= k <= len(data_shape) - b:
        raise ValueError(
            f"{op}: indices of shape {list(indices.shape)} index {k} axes of data of shape "
            f"{list(data_shape)}; expected 1 to {len(data_shape) - b}"
        )
    batch = int(np.prod(data_shape[:b], dtype=np.int64))
    idx = indices.reshape(batch, int(np.prod(indices.shape[b:-1], dtype=np.int64)), k)
    for j in range(k):
        _checked(idx[..., j], data_shape[b + j], op)
    rows = np.arange(batch, dtype=np.intp)[:, None]
    return (rows, *(idx[..., j].astype(np.intp) for j in range(k)))


@kernel("GatherND", since=11)
def gather_nd(data: np.ndarray, indices: np.ndarray, *, batch_dims: int = 0) -> np.ndarray:
    """Each row of the last indices axis picks a slice of ``data`` after the batch dims."""
    b, k = int(batch_dims), indices.shape[-1]
    batch_data = data.reshape(int(np.prod(data.shape[:b], dtype=np.int64)), *data.shape[b:])
    picked = batch_data[_nd_index(data.shape, indices, b, "GatherND")]
    return picked.reshape(indices.shape[:-1] + data.shape[b + k :])


# --- Scatter family -------------------------------------------------------------------------------

_REDUCTIONS: dict[str, Callable[..., None]] = {
    "add": np.add.at,
    "mul": np.multiply.at,
    "max": np.maximum.at,
    "min": np.minimum.at,
}


def _scatter_into(out: np.ndarray, where: tuple, updates: np.ndarray, reduction: str) -> np.ndarray:
    """Write or accumulate ``updates`` at ``where`` (``ufunc.at`` applies duplicates in turn).

    Raises ValueError for an unknown reduction.
    """
    if reduction == "none":
        out[where] = updates
    elif reduction in _REDUCTIONS:
        _REDUCTIONS[reduction](out, where, updates)
    else:
        raise ValueError(f"reduction {reduction!r} is not one of none, {', '.join(_REDUCTIONS)}")
    return out


@kernel("ScatterElements", since=11)
def scatter_elements(
    data: np.ndarray,
    indices: np.ndarray,
    updates: np.ndarray,
    *,
    axis: int = 0,
    reduction: str = "none",
) -> np.ndarray:
    """A copy of ``data`` with ``updates`` put at GatherElements' positions.

    ``reduction`` comes with opset 16 (add, mul) and 18 (max, min).
    """
    axis = axis_index(axis, data.ndim)
    where = _along(_checked(indices, data.shape[axis], "ScatterElements"), axis)
    return _scatter_into(data.copy(), where, updates, reduction)


@kernel("Scatter", since=9)
def scatter(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, axis: int = 0
) -> np.ndarray:
    """The deprecated name of ScatterElements (opsets 9 and 10)."""
    return scatter_elements(data, indices, updates, axis=axis)


@kernel("ScatterND", since=11)
def scatter_nd(
    data: np.ndarray, indices: np.ndarray, updates: np.ndarray, *, reduction: str = "none"
) -> np.ndarray:
    """A copy of ``data`` with ``updates`` put at GatherND's slices (batch_dims 0)."""
    out = data.copy()
    flat = out.reshape(1, *data.shape)
    where = _nd_index(flat.shape, indices.reshape(1, *indices.shape), 1, "ScatterND")
    rows = updates.reshape(1, -1, *data.shape[indices.shape[-1] :])
    _scatter_into(flat, where, rows, reduction)
    return out


# --- selection ------------------------------------------------------------------------------------


@kernel("Compress", since=9)
def compress(data: np.ndarray, condition: np.ndarray, *, axis: int | None = None) -> np.ndarray:
    """Slices where ``condition`` is true; without ``axis`` the flattened tensor.

    A condition shorter than the axis keeps nothing past its end, as ONNX says.
    """
    cond = condition.astype(bool).reshape(-1)
    if axis is None:
        return np.compress(cond, data.reshape(-1))
    return np.compress(cond, data, axis=axis_index(axis, data.ndim))


@kernel("NonZero", since=9)
def non_zero(data: np.ndarray) -> np.ndarray:
    """(rank, count) int64 coordinates, row-major order; a scalar counts as shape (1,)."""
    coords = np.nonzero(data.reshape(1) if data.ndim == 0 else data)
    return np.array(coords, dtype=_INDEX).reshape(len(coords), -1)


@kernel("OneHot", since=9)
def one_hot(
    indices: np.ndarray, depth: np.ndarray, values: np.ndarray, *, axis: int = -1
) -> np.ndarray:
    """``values[1]`` where the new axis equals the index, ``values[0]`` elsewhere.

    Negative indices count from ``depth`` (opset 11); ones still out of range give an all-off
    row.
    """
    depths = np.asarray(depth).reshape(-1)
    if depths.size != 1 or depths[0] < 0:
        raise ValueError(f"OneHot: depth is {depths.tolist()}; expected one number, 0 or more")
    d = int(depths[0])
    idx = indices.astype(np.int64)
    idx = np.where(idx < 0, idx + d, idx)
    hot = idx[..., None] == np.arange(d, dtype=np.int64)
    hot = np.moveaxis(hot, -1, axis_index(axis, indices.ndim + 1))
    off, on = values.reshape(-1)[:2]
    return np.where(hot, on, off)
