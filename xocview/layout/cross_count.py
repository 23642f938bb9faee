"""Counting edge crossings between adjacent layers, vectorised.

Two segments (u1, v1) and (u2, v2) between the same pair of layers cross when their ends are
in opposite orders. Sorting segments by upper position, the crossings are the inversions of
the lower positions; they are counted for all layer pairs at once by a bottom-up merge sort
in numpy (log2(E) passes of a stable argsort).
"""

from __future__ import annotations

import numpy as np

__all__ = ["count_crossings", "inversions"]

_I = np.int64


def inversions(values: np.ndarray) -> int:
    """Number of pairs i < j with values[i] > values[j] (non-negative integers).

    Pass k merges sorted runs of width w = 2**k pairwise. In a block, a stable sort puts a
    right-run element after the left-run elements not greater than it and after the right-run
    elements before it, so its index minus its merged position is the number of left-run
    elements greater than it (a right run always follows a full left run of w). Timsort merges
    the two runs of every block in linear time.
    """
    arr = np.asarray(values, dtype=_I)
    n = len(arr)
    if n < 2:
        return 0
    big = int(arr.max()) + 1
    idx = np.arange(n, dtype=_I)
    merged_at = np.empty(n, dtype=_I)
    total = 0
    width = 1
    while width < n:
        block = idx // (2 * width)
        right = (idx // width) % 2 == 1
        perm = np.argsort(block * big + arr, kind="stable")  # sorts within blocks only
        merged_at[perm] = idx
        total += int((idx[right] - merged_at[right]).sum())
        arr = arr[perm]
        width *= 2
    return total


def count_crossings(
    seg_upper: np.ndarray, seg_lower: np.ndarray, layer_of_upper: np.ndarray, pos: np.ndarray
) -> int:
    """Total crossings of segments upper -> lower (upper on layer L, lower on L + 1).

    ``pos`` is each node's position within its layer; ``layer_of_upper`` the layer of each
    segment's upper end. Segments of different layer pairs never count against each other.
    """
    if len(seg_upper) < 2:
        return 0
    pu, pl = pos[seg_upper], pos[seg_lower]
    order = np.lexsort((pl, pu, layer_of_upper))
    span = int(pl.max()) + 1
    return inversions(layer_of_upper[order] * span + pl[order])
