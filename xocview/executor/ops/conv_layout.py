"""Conv's scratch layouts and the layout helpers its methods share.

Scratch arrays are carved from the per-thread kernel scratch (``scratch``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.ops.scratch import ALIGN, scratch
from xocview.executor.ops.spatial import Geometry, Index

__all__ = [
    "Layout",
    "Run",
    "Shape",
    "balanced_band",
    "cropped_copy",
    "padded_spatial",
    "row_strides",
    "strided_view",
    "zero_padded",
]

Shape = tuple[int, ...]
# A prepared Conv: (X, W) -> Y without the bias; made once per shapes, dtypes and attributes.
Run = Callable[[np.ndarray, np.ndarray], np.ndarray]


class Layout:
    """Where a plan's scratch arrays lie in the per-thread buffer, worked out once."""

    __slots__ = ("placed", "total")

    def __init__(self, *specs: tuple[Shape, Any]) -> None:
        at, placed = 0, []
        for shape, dt in specs:
            size = math.prod(shape) * np.dtype(dt).itemsize
            placed.append((at, size, tuple(shape), np.dtype(dt)))
            at += -(-size // ALIGN) * ALIGN
        self.placed = tuple(placed)
        self.total = at

    def carve(self) -> list[np.ndarray]:
        """The arrays, uninitialised; valid until this thread's next use of the kernel
        scratch: never return them."""
        buf, base = scratch(self.total)
        return [
            buf[base + at : base + at + size].view(dt).reshape(shape)
            for at, size, shape, dt in self.placed
        ]


def row_strides(shape: Shape) -> Shape:
    """Element strides of a C-contiguous array of this shape."""
    return tuple(math.prod(shape[i + 1 :]) for i in range(len(shape)))


def padded_spatial(xshape: Shape, g: Geometry) -> Shape:
    return tuple(n + b + e for n, b, e in zip(xshape[2:], g.begin, g.end, strict=True))


def zero_padded(x: np.ndarray, g: Geometry, into: np.ndarray) -> np.ndarray:
    """X with the geometry's zero padding around its spatial axes, written into ``into``."""
    into.fill(0)
    inner: Index = (
        Ellipsis,
        *(slice(b, b + n) for b, n in zip(g.begin, x.shape[2:], strict=True)),
    )
    into[inner] = x
    return into


def strided_view(base: np.ndarray, start: int, shape: Shape, strides: Shape) -> np.ndarray:
    """The strided view of C-contiguous ``base`` at element ``start`` (strides in elements);
    numpy checks that it stays inside ``base``. A tenth of as_strided's cost."""
    item = base.itemsize
    return np.ndarray(shape, base.dtype, base, start * item, tuple(s * item for s in strides))


def cropped_copy(y: np.ndarray, shape: Shape, strides: Shape) -> np.ndarray:
    """A fresh C-contiguous copy of a strided view of scratch ``y`` (a copy even when the view
    is contiguous: scratch must not escape)."""
    return np.array(strided_view(y, 0, shape, strides), order="C")


def balanced_band(total: int, per: int) -> int:
    """``per`` evened out so that the bands over ``total`` are (nearly) equal."""
    per = max(1, min(total, per))
    return -(-total // -(-total // per))
