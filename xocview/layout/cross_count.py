"""Counting edge crossings between adjacent layers, vectorised.

Two segments (u1, v1) and (u2, v2) between the same pair of layers cross when their ends are
in opposite orders. Sorting segments by upper position, the crossings are the inversions of
the lower positions; they are counted for all layer pairs at once by a bottom-up merge sort
in numpy (log2(E) passes of sort + searchsorted).
"""

from __future__ import annotations

import numpy as np

__all__ = ["count_crossings", "inversions"]

_I = np.int64


def inversions(values: np.ndarray) -> int:
    """Number of pairs i < j with values[i] > values[j] (non-negative integers)."""
    arr = np.asarray(values, dtype=_I)
    n = len(arr)
    if n < 2:
        return 0
    big = int(arr.max()) + 1
    idx = np.arange(n, dtype=_I)
    total = 0
    width = 1
    while width < n:
        block = idx // (2 * width)
        right = (idx // width) % 2 == 1
        keyed = block * big + arr
        left_keys = keyed[~right]  # runs sorted, blocks increasing: sorted overall
        rk = keyed[right]
        rb = block[right]
        not_greater = np.searchsorted(left_keys, rk, side="right")
        block_end = np.searchsorted(left_keys, (rb + 1) * big, side="left")
        total += int((block_end - not_greater).sum())
        arr = np.sort(keyed) - block * big  # keyed sorts within blocks; block ids unchanged
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
