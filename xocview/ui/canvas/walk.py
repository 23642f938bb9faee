"""Walking the drawing with the arrow keys: from a box to the nearest predecessor (up),
successor (down) or neighbour on its layer (left, right)."""

from __future__ import annotations

import numpy as np

from xocview.ui.canvas.drawing import Drawing

__all__ = ["next_item"]


def next_item(d: Drawing, item: int, toward: str) -> int:
    """The item an arrow key moves to from ``item`` ("up", "down", "left", "right"), or -1.

    Up and down follow the edges (the one whose other end is nearest across); left and right
    stay on the same row."""
    if toward in ("up", "down"):
        cands = d.edge_src[d.edge_dst == item] if toward == "up" else d.edge_dst[d.edge_src == item]
    else:
        same = np.flatnonzero(np.abs(d.y - d.y[item]) < 1.0)
        cands = same[d.x[same] < d.x[item]] if toward == "left" else same[d.x[same] > d.x[item]]
    if not len(cands):
        return -1
    return int(cands[np.argmin(np.abs(d.x[cands] - d.x[item]))])
