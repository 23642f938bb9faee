"""Connected components, found and then placed side by side."""

from __future__ import annotations

import numpy as np

__all__ = ["components", "side_by_side"]

_I = np.int64


def components(n: int, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Component id of every node (undirected), numbered in order of their smallest node.

    Label propagation with pointer jumping: each round hooks every edge's larger label onto
    the smaller and then shortcuts label chains, so it ends in a few rounds, not the diameter.
    """
    label = np.arange(n, dtype=_I)
    if len(src):
        while True:
            ls, ld = label[src], label[dst]
            low = np.minimum(ls, ld)
            before = label.copy()
            np.minimum.at(label, ls, low)
            np.minimum.at(label, ld, low)
            while True:
                jumped = label[label]
                if np.array_equal(jumped, label):
                    break
                label = jumped
            if np.array_equal(label, before):
                break
    _, comp = np.unique(label, return_inverse=True)
    return comp.reshape(-1).astype(_I)


def side_by_side(x: np.ndarray, widths: np.ndarray, comp: np.ndarray, gap: float) -> np.ndarray:
    """Shift each component so that their bounding boxes sit in a row, in component order."""
    k = int(comp.max()) + 1 if len(comp) else 0
    if k <= 1:
        return x - (x - widths / 2).min() if len(x) else x
    left = np.full(k, np.inf)
    right = np.full(k, -np.inf)
    np.minimum.at(left, comp, x - widths / 2)
    np.maximum.at(right, comp, x + widths / 2)
    span = right - left
    start = np.concatenate([[0.0], np.cumsum(span + gap)[:-1]])
    return x - left[comp] + start[comp]


# Rows are made only for a drawing wider than this (layout units, a window's width at the
# zoom where titles read) and than ``1 / target`` times its height, of 2 or more components.
MIN_ROW_WIDTH = 1860.0


def rows(
    x: np.ndarray,
    y: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    comp: np.ndarray,
    gap: float,
    target: float,
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per-component shifts that fill rows with side-by-side components, or None.

    A file of weights (32 unconnected layer groups) or a model of many small graphs would be
    one row 8,000 units wide; rows of about ``sqrt(area / target)`` width, filled in
    component order as text fills lines, bring height/width near ``target``.
    """
    k = int(comp.max()) + 1 if len(comp) else 0
    if k < 2:
        return None
    left = np.full(k, np.inf)
    right = np.full(k, -np.inf)
    top = np.full(k, np.inf)
    bottom = np.full(k, -np.inf)
    np.minimum.at(left, comp, x - widths / 2)
    np.maximum.at(right, comp, x + widths / 2)
    np.minimum.at(top, comp, y - heights / 2)
    np.maximum.at(bottom, comp, y + heights / 2)
    span_w, span_h = right - left + gap, bottom - top + gap
    width = float(span_w.sum() - gap)
    height = float(span_h.max() - gap)
    if width <= MIN_ROW_WIDTH or width * target <= height:
        return None
    row_width = max(float(np.sqrt((span_w * span_h).sum() / target)), float(span_w.max()))
    row = _greedy_rows(span_w, row_width)
    count = int(row[-1]) + 1
    if count < 2:
        return None
    row_height = np.zeros(count)
    np.maximum.at(row_height, row, span_h)
    row_top = np.concatenate([[0.0], np.cumsum(row_height)[:-1]])
    first_in_row = np.r_[True, row[1:] != row[:-1]]
    start = np.cumsum(span_w) - span_w  # left edge as if in one row
    row_start = np.maximum.accumulate(np.where(first_in_row, start, 0.0))
    dx = start - row_start - left
    dy = row_top[row] - top
    return dx[comp], dy[comp]


def _greedy_rows(spans: np.ndarray, row_width: float) -> np.ndarray:
    """The row of each span, a new row begun when the next span would pass ``row_width``."""
    out = np.zeros(len(spans), dtype=_I)
    used, current = 0.0, 0
    for i, s in enumerate(spans.tolist()):  # one step per component, not per node
        if used > 0 and used + s > row_width:
            current += 1
            used = 0.0
        out[i] = current
        used += s
    return out
