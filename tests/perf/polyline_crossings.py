"""Crossings between edge polylines, counted the same way for every layout engine.

Polylines are cut into pieces no longer than a grid cell; pieces are bucketed by the cells
their bounding boxes touch; pairs within a cell are tested for proper intersection, all in
numpy. A crossing is a pair of intersecting pieces of two edges that share no end node
(edges meeting at a node do not cross there); a pair found in several cells counts once.
Edges of one source drawn along one shared trunk (a bus) are one line where they overlap:
their identical pieces count as one, else one crossing of two trunks of 19 edges would
count 361 times.
"""

from __future__ import annotations

import numpy as np

__all__ = ["count_crossings", "total_length"]


def total_length(polylines: list[np.ndarray]) -> float:
    return float(sum(np.linalg.norm(np.diff(p, axis=0), axis=1).sum() for p in polylines))


def _pieces(polylines: list[np.ndarray], cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Segments (k, 4) no longer than ``cell``, and the edge each belongs to."""
    segs, owner = [], []
    for e, p in enumerate(polylines):
        if len(p) < 2:
            continue
        a, b = p[:-1], p[1:]
        length = np.linalg.norm(b - a, axis=1)
        parts = np.maximum(1, np.ceil(length / cell)).astype(np.int64)
        idx = np.repeat(np.arange(len(a)), parts)
        start = np.concatenate([[0], np.cumsum(parts)[:-1]])
        k = np.arange(parts.sum()) - np.repeat(start, parts)
        t0 = k / parts[idx]
        t1 = (k + 1) / parts[idx]
        d = (b - a)[idx]
        p0 = a[idx] + d * t0[:, None]
        p1 = a[idx] + d * t1[:, None]
        segs.append(np.hstack([p0, p1]))
        owner.append(np.full(len(p0), e))
    if not segs:
        return np.zeros((0, 4)), np.zeros(0, dtype=np.int64)
    return np.vstack(segs), np.concatenate(owner)


def _one_per_trunk(
    seg: np.ndarray, owner: np.ndarray, src: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pieces with identical ends and the same source kept once (the first edge's)."""
    if not len(seg):
        return seg, owner
    key = np.column_stack([src[owner].astype(np.float64), np.round(seg, 6)])
    _, first = np.unique(key, axis=0, return_index=True)
    first = np.sort(first)
    return seg[first], owner[first]


def _orient(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, cx: np.ndarray, cy: np.ndarray
) -> np.ndarray:
    return np.sign((bx - ax) * (cy - ay) - (by - ay) * (cx - ax))


def count_crossings(polylines: list[np.ndarray], src: np.ndarray, dst: np.ndarray) -> int:
    """Proper crossings between polylines of edges with no common end node."""
    if len(polylines) < 2:
        return 0
    allp = np.vstack([p for p in polylines if len(p)])
    span = max(float(np.ptp(allp[:, 0])), float(np.ptp(allp[:, 1])), 1.0)
    lengths = np.concatenate(
        [np.linalg.norm(np.diff(p, axis=0), axis=1) for p in polylines if len(p) > 1]
        or [np.zeros(0)]
    )
    cell = max(float(np.median(lengths)) if len(lengths) else span, span / 4096)
    seg, owner = _pieces(polylines, cell)
    seg, owner = _one_per_trunk(seg, owner, src)
    x0, y0 = allp[:, 0].min(), allp[:, 1].min()
    cx1 = np.floor((np.minimum(seg[:, 0], seg[:, 2]) - x0) / cell).astype(np.int64)
    cx2 = np.floor((np.maximum(seg[:, 0], seg[:, 2]) - x0) / cell).astype(np.int64)
    cy1 = np.floor((np.minimum(seg[:, 1], seg[:, 3]) - y0) / cell).astype(np.int64)
    cy2 = np.floor((np.maximum(seg[:, 1], seg[:, 3]) - y0) / cell).astype(np.int64)
    ncols = int(cx2.max()) + 2
    cells, members = [], []
    for dx in (0, 1):
        for dy in (0, 1):
            ok = (cx1 + dx <= cx2) & (cy1 + dy <= cy2)
            cells.append((cy1[ok] + dy) * ncols + cx1[ok] + dx)
            members.append(np.flatnonzero(ok))
    cell_id = np.concatenate(cells)
    member = np.concatenate(members)
    order = np.argsort(cell_id, kind="stable")
    cell_id, member = cell_id[order], member[order]
    starts = np.flatnonzero(np.r_[True, cell_id[1:] != cell_id[:-1]])
    counts = np.diff(np.r_[starts, len(cell_id)])
    found_a, found_b = [], []
    # all pairs within each cell, in chunks of cells with the same size to stay vectorised
    for size in np.unique(counts[counts > 1]):
        group = starts[counts == size]
        i, j = np.triu_indices(int(size), k=1)
        a = member[group[:, None] + i[None, :]].ravel()
        b = member[group[:, None] + j[None, :]].ravel()
        found_a.append(a)
        found_b.append(b)
    if not found_a:
        return 0
    a, b = np.concatenate(found_a), np.concatenate(found_b)
    ea, eb = owner[a], owner[b]
    keep = (
        (ea != eb)
        & (src[ea] != src[eb])
        & (src[ea] != dst[eb])
        & (dst[ea] != src[eb])
        & (dst[ea] != dst[eb])
    )
    a, b = a[keep], b[keep]
    p, q = seg[a], seg[b]
    d1 = _orient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], q[:, 0], q[:, 1])
    d2 = _orient(p[:, 0], p[:, 1], p[:, 2], p[:, 3], q[:, 2], q[:, 3])
    d3 = _orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], p[:, 0], p[:, 1])
    d4 = _orient(q[:, 0], q[:, 1], q[:, 2], q[:, 3], p[:, 2], p[:, 3])
    hit = (d1 * d2 < 0) & (d3 * d4 < 0)
    lo, hi = np.minimum(a[hit], b[hit]), np.maximum(a[hit], b[hit])
    return len(np.unique(lo * len(seg) + hi))
