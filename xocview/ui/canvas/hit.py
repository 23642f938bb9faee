"""Hit testing on a Drawing: which box, frame title or edge lies under a point of the graph."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QPointF

from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.painter import frame_title_rect

__all__ = ["hit_test"]


def hit_test(d: Drawing, p: QPointF, tol: float) -> tuple[str, int]:
    """What is at scene point ``p``: ("item", k), ("frame", group), ("edge", e) or none;
    ``tol`` is how far (in scene units) an edge may pass and still be hit."""
    k = d.item_at(p.x(), p.y())
    if k >= 0:
        return "item", k
    for g, box in reversed(d.frames):
        if frame_title_rect(box).contains(p):
            return "frame", g
    for e in d.visible_edges(p.x() - tol, p.y() - tol, p.x() + tol, p.y() + tol).tolist():
        if _near_polyline(d.edges[e], p.x(), p.y(), tol):
            return "edge", e
    return "none", -1


def _near_polyline(pts: np.ndarray, px: float, py: float, tol: float) -> bool:
    a, b = pts[:-1], pts[1:]
    ab = b - a
    ap = np.array([px, py]) - a
    t = np.clip((ap * ab).sum(axis=1) / np.maximum((ab * ab).sum(axis=1), 1e-9), 0, 1)
    closest = a + ab * t[:, None]
    return bool((np.hypot(*(closest - [px, py]).T) <= tol).any())
