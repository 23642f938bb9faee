"""Unique: the distinct elements (or subtensors along an axis) of a tensor, with the indices of
their first occurrences, the inverse mapping and the counts."""

from __future__ import annotations

import math

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["unique"]


def _rows(x: np.ndarray, axis: int) -> np.ndarray:
    """The subtensors along ``axis`` as the rows of a 2-D array.

    Strings become integer codes that sort as the strings do: numpy's ``unique`` with an axis
    does not take object arrays, and equal codes mean equal strings.
    """
    width = math.prod(x.shape[:axis] + x.shape[axis + 1 :])
    rows = np.moveaxis(x, axis, 0).reshape(x.shape[axis], width)  # -1 cannot size no rows
    if rows.dtype.kind != "O":
        return rows
    _, codes = np.unique(rows.reshape(-1), return_inverse=True)
    return np.asarray(codes).reshape(rows.shape)


def _first_occurrence_order(
    indices: np.ndarray, inverse: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sorted unique values renumbered in the order of their first occurrence in the input."""
    order = np.argsort(indices, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return indices[order], rank[inverse], counts[order]


@kernel("Unique", since=11)
def unique(
    x: np.ndarray, *, axis: int | None = None, sorted: int = 1
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Y, indices (first occurrence in X), inverse_indices (X -> Y) and counts, all int64.

    Without ``axis`` the input is flattened. With ``sorted=0`` Y follows the order of first
    occurrence. NaNs count as one value, as numpy's ``unique`` has them.
    """
    if axis is None:
        source = x.reshape(-1)
        _, indices, inverse, counts = np.unique(
            source, return_index=True, return_inverse=True, return_counts=True
        )
        take_axis = 0
    else:
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"Unique: axis {axis} is out of range for rank {x.ndim}")
        take_axis = axis % x.ndim
        source = x
        _, indices, inverse, counts = np.unique(
            _rows(x, take_axis),
            axis=0,
            return_index=True,
            return_inverse=True,
            return_counts=True,
        )
    inverse = inverse.reshape(-1)
    if not sorted:
        indices, inverse, counts = _first_occurrence_order(indices, inverse, counts)
    y = np.take(source, indices, axis=take_axis)
    as64 = [a.astype(np.int64, copy=False) for a in (indices, inverse, counts)]
    return y, as64[0], as64[1], as64[2]
