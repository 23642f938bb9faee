"""Graph inputs moved above what reads them, where the way down is clear.

The layout places a graph input above the middle of the box it feeds; when that box is a
frame (a DenseNet split into parts, an encoder scope) whose reader sits in its first column,
the input ends up above unrelated operators, with its edge running sideways across the
picture. Netron draws the input straight above its reader. After the layout, an input read
by one box moves over that box when nothing stands between them or beside it in its row, and
its edge becomes the straight line down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xocview.ui.canvas.drawing import Drawing

__all__ = ["inputs_above_readers"]

_GAP = 12.0  # the least room kept between the moved input and a box beside it


def inputs_above_readers(d: Drawing) -> int:
    """Move each input read by a single edge above its reader when the column below it and
    its place in its row are free; returns how many moved (the drawing is changed in place)."""
    moved = 0
    inputs = np.flatnonzero(np.fromiter((c == "input" for c in d.category), bool, d.count))
    if not inputs.size or not len(d.edge_src):
        return 0
    readers = np.bincount(d.edge_src, minlength=d.count)
    for k in inputs[readers[inputs] == 1].tolist():
        e = int(np.flatnonzero(d.edge_src == k)[0])
        c = int(d.edge_dst[e])
        x = float(d.x[c])
        if abs(x - float(d.x[k])) < 1.0 or not _clear(d, k, c, x):
            continue
        d.x[k] = x
        line = d.edges[e]
        top, bottom = d.y[k] + d.h[k] / 2, d.y[c] - d.h[c] / 2
        line[:, 0] = x
        line[:, 1] = np.linspace(top, bottom, len(line))
        moved += 1
    return moved


def _clear(d: Drawing, k: int, c: int, x: float) -> bool:
    """Nothing but ``k`` and ``c`` overlaps the band of ``k``'s width from ``k``'s row down to
    ``c``, nor ``k``'s new place in its row (with a gap), and ``c`` lies below ``k``."""
    half = d.w[k] / 2 + _GAP
    top, bottom = d.y[k] - d.h[k] / 2, d.y[c] - d.h[c] / 2
    if bottom <= d.y[k] + d.h[k] / 2:
        return False
    across = (d.x + d.w / 2 > x - half) & (d.x - d.w / 2 < x + half)
    down = (d.y + d.h / 2 > top) & (d.y - d.h / 2 < bottom)
    hit = across & down
    hit[[k, c]] = False
    return not bool(hit.any()) and not _in_a_frame(d, x, half, top, d.y[k] + d.h[k] / 2)


def _in_a_frame(d: Drawing, x: float, half: float, top: float, bottom: float) -> bool:
    """The input's new place would lie on a frame (its title or border): a frame beside the
    input in its row, whose reader is inside it, starts as high as the input does."""
    for _, corners in d.frames:
        x0, y0 = corners.min(axis=0)
        x1, y1 = corners.max(axis=0)
        if x0 < x + half and x - half < x1 and y0 < bottom and top < y1:
            return True
    return False
