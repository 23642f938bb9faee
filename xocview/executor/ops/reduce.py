"""Reduction kernels: the Reduce* family, ArgMax/ArgMin, TopK and CumSum."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from xocview.executor.ops.row_sums import row_sums
from xocview.executor.ops.shape import as_ints, axis_index
from xocview.executor.registry import kernel

_INDEX = np.int64

# (data, axes, keepdims) -> reduced array of data's dtype
Reducer = Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray]


def _identity(dtype: np.dtype, largest: bool) -> float | int | bool:
    """The identity of max (``largest``) or min: what reducing an empty set gives."""
    if dtype == np.bool_:
        return not largest
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min if largest else info.max
    return -np.inf if largest else np.inf


def _sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    if x.ndim and axes == (x.ndim - 1,):
        return row_sums(x, keep)
    return np.asarray(np.sum(x, axis=axes, keepdims=keep, dtype=x.dtype))


def _prod(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.asarray(np.prod(x, axis=axes, keepdims=keep, dtype=x.dtype))


def _max(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    initial = _identity(x.dtype, largest=True)
    return np.asarray(np.max(x, axis=axes, keepdims=keep, initial=initial))


def _min(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    initial = _identity(x.dtype, largest=False)
    return np.asarray(np.min(x, axis=axes, keepdims=keep, initial=initial))


def _mean(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    """Sum over count; integers divide with truncation, as onnxruntime does.

    ONNX leaves the mean of an empty set undefined; onnxruntime gives 0, and so do we.
    """
    count = max(math.prod(x.shape[a] for a in axes), 1)
    total = _sum(x, axes, keep)
    if x.dtype.kind in "iu":
        q = total // count  # floor; step towards zero where a negative sum left a remainder
        return np.asarray(q + ((total < 0) & (total % count != 0)), dtype=x.dtype)
    if total.ndim and total.dtype == x.dtype:  # a fresh array of the sums: divide in place
        total /= x.dtype.type(count)
        return total
    return np.asarray(total / x.dtype.type(count), dtype=x.dtype)


def _l1(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return _sum(np.abs(x), axes, keep)


def _sum_square(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return _sum(np.square(x), axes, keep)


def _l2(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    return np.sqrt(_sum_square(x, axes, keep)).astype(x.dtype)


def _log_sum(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(_sum(x, axes, keep)).astype(x.dtype)


def _log_sum_exp(x: np.ndarray, axes: tuple[int, ...], keep: bool) -> np.ndarray:
    """log(sum(exp(x - m))) + m with m the max, so large inputs do not overflow."""
    m = _max(x, axes, True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    with np.errstate(divide="ignore"):
        out = np.log(_sum(np.exp(x - m), axes, True)) + m
    return np.asarray(out if keep else np.squeeze(out, axis=axes), dtype=x.dtype)


def _axes(data: np.ndarray, axes: list[int], noop: int) -> tuple[int, ...]:
    """Sorted, non-negative axes; none means all of them, or none at all with ``noop``."""
    if not axes:
        return () if noop else tuple(range(data.ndim))
    return tuple(sorted({axis_index(a, data.ndim) for a in axes}))


def _register(op_type: str, reducer: Reducer, axes_input_since: int) -> None:
    """Register both versions of a Reduce op: axes as an attribute, then as an input.

    The kernels raise ValueError for an axis out of range.
    """

    def reduce_attr(
        data: np.ndarray, *, axes: Sequence[int] | None = None, keepdims: int = 1
    ) -> np.ndarray:
        return reducer(data, _axes(data, as_ints(axes), 0), bool(keepdims))

    def reduce_input(
        data: np.ndarray,
        axes: np.ndarray | None = None,
        *,
        keepdims: int = 1,
        noop_with_empty_axes: int = 0,
    ) -> np.ndarray:
        return reducer(data, _axes(data, as_ints(axes), noop_with_empty_axes), bool(keepdims))

    name = op_type[len("Reduce") :].lower()
    for fn, since, how in (
        (reduce_attr, 1, "an attribute"),
        (reduce_input, axes_input_since, "an input"),
    ):
        fn.__name__ = fn.__qualname__ = f"reduce_{name}_{since}"
        fn.__doc__ = f"{op_type} from opset {since}: the axes are {how}."
        kernel(op_type, since=since)(fn)


for _op, _reducer in {
    "ReduceSum": _sum,
    "ReduceMean": _mean,
    "ReduceMax": _max,
    "ReduceMin": _min,
    "ReduceProd": _prod,
    "ReduceL1": _l1,
    "ReduceL2": _l2,
    "ReduceSumSquare": _sum_square,
    "ReduceLogSum": _log_sum,
    "ReduceLogSumExp": _log_sum_exp,
}.items():
    _register(_op, _reducer, 13 if _op == "ReduceSum" else 18)


# --- ArgMax / ArgMin ------------------------------------------------------------------------------


def _arg(
    data: np.ndarray, axis: int, keepdims: int, last: int, pick: Callable[..., np.ndarray]
) -> np.ndarray:
    """int64 position of the extreme; ``last`` takes the last of equal ones (flip, pick, flip)."""
    axis = axis_index(axis, data.ndim)
    if last:
        at = data.shape[axis] - 1 - pick(np.flip(data, axis), axis=axis, keepdims=True)
    else:
        at = pick(data, axis=axis, keepdims=True)
    at = at.astype(_INDEX)
    return at if keepdims else np.squeeze(at, axis=axis)


@kernel("ArgMax", since=1)
def arg_max(
    data: np.ndarray, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0
) -> np.ndarray:
    """Index of the largest element along ``axis``; the first of ties unless select_last_index."""
    return _arg(data, axis, keepdims, select_last_index, np.argmax)


@kernel("ArgMin", since=1)
def arg_min(
    data: np.ndarray, *, axis: int = 0, keepdims: int = 1, select_last_index: int = 0
) -> np.ndarray:
    """Index of the smallest element along ``axis``; the first of ties unless select_last_index."""
    return _arg(data, axis, keepdims, select_last_index, np.argmin)


# --- TopK -----------------------------------------------------------------------------------------


def _top_rows(rows: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """Columns of each row's k best, in ascending column order, ties going to the lower column.

    np.partition finds the k-th value t in O(n); everything better than t is in, and the rest
    is filled with the leftmost elements equal to t.
    """
    n = rows.shape[1]
    kth = n - k if largest else k - 1
    t = np.partition(rows, kth, axis=1)[:, kth : kth + 1]
    better = rows > t if largest else rows < t
    ties = rows == t
    need = k - better.sum(axis=1, keepdims=True)
    take = better | (ties & (np.cumsum(ties, axis=1) <= need))
    return np.nonzero(take)[1].reshape(-1, k)


def _order(values: np.ndarray, largest: bool) -> np.ndarray:
    """Stable sort of the k picks: best first, equal values by lower index."""
    if not largest:
        return np.argsort(values, axis=1, kind="stable")
    k = values.shape[1]
    return (k - 1 - np.argsort(values[:, ::-1], axis=1, kind="stable"))[:, ::-1]


def _top_k(data: np.ndarray, k: int, axis: int, largest: int) -> tuple[np.ndarray, np.ndarray]:
    """Values and int64 indices of the k largest (smallest) along ``axis``, sorted.

    Raises ValueError when k is negative or larger than the axis.
    """
    axis = axis_index(axis, data.ndim)
    n = data.shape[axis]
    if not 0 <= k <= n:
        raise ValueError(f"TopK k={k} is out of range for an axis of {n}")
    moved = np.moveaxis(data, axis, -1)
    outer = moved.shape[:-1]
    rows = moved.reshape(int(np.prod(outer, dtype=np.int64)), n)
    if k == 0 or rows.shape[0] == 0:
        cols = np.zeros((rows.shape[0], k), dtype=np.intp)
    else:
        cols = _top_rows(rows, k, bool(largest))
        cols = np.take_along_axis(cols, _order(np.take_along_axis(rows, cols, 1), bool(largest)), 1)
    values = np.take_along_axis(rows, cols, 1).reshape(*outer, k)
    indices = cols.astype(_INDEX).reshape(*outer, k)
    return np.moveaxis(values, -1, axis), np.moveaxis(indices, -1, axis)


@kernel("TopK", since=1)
def top_k_1(data: np.ndarray, *, axis: int = -1, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Before opset 10, k is an attribute."""
    return _top_k(data, int(k), axis, 1)


@kernel("TopK", since=10)
def top_k(
    data: np.ndarray, k: np.ndarray, *, axis: int = -1, largest: int = 1, sorted: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """From opset 10, k is an input; opset 11 adds ``largest`` and ``sorted``.

    The output is always sorted: with sorted=0 the order is unspecified, so sorted is allowed.
    """
    return _top_k(data, as_ints(k)[0], axis, largest)


# --- CumSum ---------------------------------------------------------------------------------------


@kernel("CumSum", since=11)
def cum_sum(
    data: np.ndarray, axis: np.ndarray, *, exclusive: int = 0, reverse: int = 0
) -> np.ndarray:
    """Running sum along ``axis`` in the input's dtype; ``exclusive`` shifts by one."""
    a = axis_index(as_ints(axis)[0], data.ndim)
    src = np.flip(data, a) if reverse else data
    out = np.cumsum(src, axis=a, dtype=data.dtype)
    if exclusive:
        shifted = np.zeros_like(out)
        head = [slice(None)] * data.ndim
        tail = [slice(None)] * data.ndim
        head[a], tail[a] = slice(1, None), slice(None, -1)
        shifted[tuple(head)] = out[tuple(tail)]
        out = shifted
    return np.flip(out, a) if reverse else out
