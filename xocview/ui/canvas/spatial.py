"""Which rectangles meet which rectangles or segments, over a uniform grid.

Label placement asks this of hundreds of thousands of candidates against thousands of boxes
and edges; comparing all pairs would cost their product. Both sides are bucketed by grid
cell and only pairs sharing a cell are compared, so the cost follows the pairs that are near.
No Qt: plain numpy arrays, so that tests measure the same geometry the painter uses.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["CELL", "Grid", "Rects", "crosses_any", "meets_any", "near_pairs"]

_CHUNK = 8192  # rectangles per batch in crosses_any
CELL = 64.0  # grid cell side (scene units): about one label wide, a fraction of a box row

# x0, y0, x1, y1: one array each, one entry per rectangle
Rects = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _cells(r: Rects) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (rectangle, cell x, cell y) that a rectangle covers, as three flat arrays."""
    cx0, cy0 = (np.floor(v / CELL).astype(np.int64) for v in r[:2])
    cx1, cy1 = (np.floor(v / CELL).astype(np.int64) for v in r[2:])
    nx = cx1 - cx0 + 1
    counts = nx * (cy1 - cy0 + 1)
    owner = np.repeat(np.arange(len(cx0)), counts)
    k = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, cx0[owner] + k % nx[owner], cy0[owner] + k // nx[owner]


def near_pairs(a: Rects, b: Rects) -> tuple[np.ndarray, np.ndarray]:
    """The pairs (index in ``a``, index in ``b``) of rectangles whose interiors meet; a pair
    that shares several cells comes more than once."""
    if not len(a[0]) or not len(b[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    a_own, a_cx, a_cy = _cells(a)
    b_own, b_cx, b_cy = _cells(b)
    lo_x, lo_y = min(a_cx.min(), b_cx.min()), min(a_cy.min(), b_cy.min())
    span = max(a_cy.max(), b_cy.max()) - lo_y + 1
    a_key = (a_cx - lo_x) * span + (a_cy - lo_y)
    b_key = (b_cx - lo_x) * span + (b_cy - lo_y)
    order = np.argsort(b_key, kind="stable")
    b_key, b_own = b_key[order], b_own[order]
    first = np.searchsorted(b_key, a_key, side="left")
    count = np.searchsorted(b_key, a_key, side="right") - first
    pa = np.repeat(a_own, count)
    within = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
    pb = b_own[np.repeat(first, count) + within]
    ax0, ay0, ax1, ay1 = a
    bx0, by0, bx1, by1 = b
    meets = (ax0[pa] < bx1[pb]) & (bx0[pb] < ax1[pa]) & (ay0[pa] < by1[pb]) & (by0[pb] < ay1[pa])
    return pa[meets], pb[meets]


def meets_any(a: Rects, b: Rects) -> np.ndarray:
    """For each rectangle of ``a``, whether its interior meets that of a rectangle of ``b``."""
    hit = np.zeros(len(a[0]), dtype=bool)
    hit[near_pairs(a, b)[0]] = True
    return hit


def crosses_any(a: Rects, p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """For each rectangle of ``a``, whether a segment from ``p[k]`` to ``q[k]`` ((n, 2) arrays)
    passes through its interior.

    A segment meets a rectangle when their bounding boxes meet and the rectangle's corners are
    not all on one side of the segment's line (the separating axes of the two).
    """
    hit = np.zeros(len(a[0]), dtype=bool)
    if not len(p):
        return hit
    # Edges that share a route share its segments (a value read by every copy of a body runs
    # down one lane: 60k segments, 5k distinct); each is looked at once.
    ends = np.unique(np.hstack([p, q]), axis=0)
    p, q = ends[:, :2], ends[:, 2:]
    # Each segment is cut into pieces no longer than a cell before bucketing: the bounding box
    # of a long slanted edge covers (length / CELL)^2 cells, every label candidate in them a
    # pair (an edge across a tall frame: gigabytes); the pieces cover about length / CELL.
    length = np.hypot(q[:, 0] - p[:, 0], q[:, 1] - p[:, 1])
    pieces = np.maximum(1, np.ceil(length / CELL)).astype(np.int64)
    seg = np.repeat(np.arange(len(p)), pieces)
    k = np.arange(len(seg)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    step = (q - p) / pieces[:, None]
    s0 = p[seg] + step[seg] * k[:, None]
    s1 = p[seg] + step[seg] * (k + 1)[:, None]
    eps = 1e-6  # a level or upright segment has a flat box: widen it a hair so that it meets
    boxes = (
        np.minimum(s0[:, 0], s1[:, 0]) - eps,
        np.minimum(s0[:, 1], s1[:, 1]) - eps,
        np.maximum(s0[:, 0], s1[:, 0]) + eps,
        np.maximum(s0[:, 1], s1[:, 1]) + eps,
    )
    for start in range(0, len(a[0]), _CHUNK):  # the pairs of a chunk at a time: bounded memory
        end = start + _CHUNK
        part: Rects = (a[0][start:end], a[1][start:end], a[2][start:end], a[3][start:end])
        pa, pieces_hit = near_pairs(part, boxes)
        pb = seg[pieces_hit]  # in a piece's box, the segment's line decides, as for the piece
        x0, y0, x1, y1 = (v[pa] for v in part)
        px, py = p[pb, 0], p[pb, 1]
        dx, dy = q[pb, 0] - px, q[pb, 1] - py
        sides = [
            dx * (cy - py) - dy * (cx - px) for cx, cy in ((x0, y0), (x1, y0), (x0, y1), (x1, y1))
        ]
        hit[start + pa[(np.minimum.reduce(sides) < 0) & (np.maximum.reduce(sides) > 0)]] = True
    return hit


class Grid:
    """Rectangles added one at a time, and whether a new one would meet any of them: the
    greedy placement's question, asked once per candidate, so a hash of cells, not numpy."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[tuple[float, float, float, float]]] = {}

    @staticmethod
    def _keys(x0: float, y0: float, x1: float, y1: float) -> list[tuple[int, int]]:
        gx0, gy0 = math.floor(x0 / CELL), math.floor(y0 / CELL)
        gx1, gy1 = math.floor(x1 / CELL), math.floor(y1 / CELL)
        return [(cx, cy) for cx in range(gx0, gx1 + 1) for cy in range(gy0, gy1 + 1)]

    def meets(self, x0: float, y0: float, x1: float, y1: float) -> bool:
        return any(
            x0 < rx1 and rx0 < x1 and y0 < ry1 and ry0 < y1
            for key in self._keys(x0, y0, x1, y1)
            for rx0, ry0, rx1, ry1 in self._cells.get(key, ())
        )

    def add(self, x0: float, y0: float, x1: float, y1: float) -> None:
        for key in self._keys(x0, y0, x1, y1):
            self._cells.setdefault(key, []).append((x0, y0, x1, y1))
