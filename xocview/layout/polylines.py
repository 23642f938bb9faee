"""Many polylines in one array of points, so that moving, boxing or turning all of them is
one numpy operation rather than one per edge (a 100k-node drawing has 130k edges)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import pairwise
from typing import overload

import numpy as np

__all__ = ["Polylines", "gather_index"]

_I = np.int64


def gather_index(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The indices ``starts[k] + j`` for ``j < counts[k]``, for every k in turn."""
    counts = np.asarray(counts, dtype=_I)
    total = int(counts.sum())
    if not total:
        return np.zeros(0, dtype=_I)
    first = np.cumsum(counts) - counts
    return np.repeat(np.asarray(starts, dtype=_I) - first, counts) + np.arange(total, dtype=_I)


class Polylines(Sequence[np.ndarray]):
    """Line i is ``points[ptr[i]:ptr[i + 1]]`` (a view: changing it changes the points)."""

    def __init__(self, points: np.ndarray, ptr: np.ndarray) -> None:
        self.points = points
        self.ptr = np.asarray(ptr, dtype=_I)

    @staticmethod
    def of(lines: Sequence[np.ndarray]) -> Polylines:
        if isinstance(lines, Polylines):
            return lines
        counts = np.fromiter((len(p) for p in lines), dtype=_I, count=len(lines))
        pts = np.concatenate(list(lines)) if len(lines) else np.zeros((0, 2))
        return Polylines(
            pts.reshape(-1, 2).astype(np.float64, copy=False), np.r_[0, np.cumsum(counts)]
        )

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.ptr)

    def __len__(self) -> int:
        return len(self.ptr) - 1

    @overload
    def __getitem__(self, i: int) -> np.ndarray: ...

    @overload
    def __getitem__(self, i: slice) -> list[np.ndarray]: ...

    def __getitem__(self, i: int | slice) -> np.ndarray | list[np.ndarray]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        k = int(i)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(i)
        return self.points[self.ptr[k] : self.ptr[k + 1]]

    def __iter__(self) -> Iterator[np.ndarray]:
        pts, ptr = self.points, self.ptr.tolist()
        for a, b in pairwise(ptr):
            yield pts[a:b]

    def boxes(self) -> np.ndarray:
        """(x0, y0, x1, y1) of every line (a line without points gets NaN)."""
        out = np.full((len(self), 4), np.nan)
        full = np.flatnonzero(self.counts > 0)
        if len(full):
            starts = self.ptr[full]
            out[full, :2] = np.minimum.reduceat(self.points, starts, axis=0)
            out[full, 2:] = np.maximum.reduceat(self.points, starts, axis=0)
        return out

    def turned(self) -> Polylines:
        """Every line with x and y swapped (a top-down layout seen left to right)."""
        return Polylines(self.points[:, ::-1].copy(), self.ptr)
