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
