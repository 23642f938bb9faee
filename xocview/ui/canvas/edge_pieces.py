"""Edges that share their route, stroked once.

Many edges of a big drawing run down the same lanes: a value read by every copy of a body, an
attention mask read by every layer. Each edge's curve is its straight runs and its rounded
corners (``corner_points``); an edge that follows another's route has the same pieces there,
so the pieces of all edges in view are stroked once each. On 1,100 edges of 17k nodes in If
bodies: 124k pieces, 3.5k distinct, and the stroking went from 15 s to under one.
"""

from __future__ import annotations

from typing import cast

import numpy as np
from PySide6.QtCore import QLineF, QPointF
from PySide6.QtGui import QPainter, QPainterPath

from xocview.ui.canvas.drawing import Drawing

__all__ = ["CORNER", "SHARED_FROM", "corner_points", "paint_shared"]

CORNER = 14.0  # the largest radius with which an edge rounds a corner of its route

SHARED_FROM = 20_000  # route points in view above which pieces are stroked once
_QUADS_PER_PATH = 256  # Qt's stroker on one path of thousands of curves is slow: in batches

Rect = tuple[float, float, float, float]
_Pieces = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def corner_points(pts: np.ndarray, radius: float = CORNER) -> np.ndarray:
    """Each interior point of a route as (before, corner, after): where the rounding starts,
    the control point and where it ends, at most ``radius`` from the corner (half a segment
    at most). Rounding only near the corners keeps the curve on the route the layout made
    around the boxes; rounding to segment midpoints cut across boxes on long segments."""
    seg = np.diff(pts, axis=0)
    length = np.hypot(seg[:, 0], seg[:, 1])
    unit = seg / np.maximum(length, 1e-9)[:, None]
    r = np.minimum(radius, np.minimum(length[:-1], length[1:]) / 2)[:, None]
    corner = pts[1:-1]
    return np.stack([corner - unit[:-1] * r, corner, corner + unit[1:] * r], axis=1)


def _pieces(d: Drawing) -> _Pieces:
    """Every edge's straight runs (x0, y0, x1, y1) and corners (ax, ay, cx, cy, bx, by), each
    with its edge; made once per drawing."""
    found = d.paint_cache.get("edge_pieces")
    if found is None:
        lines, line_edge, quads, quad_edge = [], [], [], []
        for e, pts in enumerate(d.edges):
            if len(pts) < 2:
                continue
            if len(pts) > 2:
                c = corner_points(pts)
                starts = np.vstack([pts[:1], c[:, 2]])
                ends = np.vstack([c[:, 0], pts[-1:]])
                quads.append(c.reshape(-1, 6))
                quad_edge.append(np.full(len(c), e))
            else:
                starts, ends = pts[:1], pts[-1:]
            lines.append(np.hstack([starts, ends]))
            line_edge.append(np.full(len(starts), e))
        found = (
            np.vstack(lines) if lines else np.zeros((0, 4)),
            np.concatenate(line_edge) if line_edge else np.zeros(0, np.int64),
            np.vstack(quads) if quads else np.zeros((0, 6)),
            np.concatenate(quad_edge) if quad_edge else np.zeros(0, np.int64),
        )
        d.paint_cache["edge_pieces"] = found
    return cast(_Pieces, found)


def _in_view(xy: np.ndarray, rect: Rect | None, margin: float) -> np.ndarray:
    """Rows whose points' bounding box meets ``rect`` grown by ``margin``."""
    if rect is None:
        return np.ones(len(xy), bool)
    xs, ys = xy[:, 0::2], xy[:, 1::2]
    x0, y0, x1, y1 = rect
    return (
        (xs.max(axis=1) >= x0 - margin)
        & (xs.min(axis=1) <= x1 + margin)
        & (ys.max(axis=1) >= y0 - margin)
        & (ys.min(axis=1) <= y1 + margin)
    )


def paint_shared(painter: QPainter, d: Drawing, edges: list[int], rect: Rect | None) -> None:
    """Stroke the curves of ``edges`` (without arrowheads), each distinct piece once."""
    lines, line_edge, quads, quad_edge = _pieces(d)
    wanted = np.zeros(len(d.edges), bool)
    wanted[edges] = True
    lines = lines[wanted[line_edge]]
    quads = quads[wanted[quad_edge]]
    lines = np.unique(lines[_in_view(lines, rect, 2.0)], axis=0)
    lines = lines[(lines[:, 0] != lines[:, 2]) | (lines[:, 1] != lines[:, 3])]
    quads = np.unique(quads[_in_view(quads, rect, 2.0)], axis=0)
    painter.drawLines([QLineF(x0, y0, x1, y1) for x0, y0, x1, y1 in lines.tolist()])
    rows = quads.tolist()
    for start in range(0, len(rows), _QUADS_PER_PATH):
        path = QPainterPath()
        for ax, ay, cx, cy, bx, by in rows[start : start + _QUADS_PER_PATH]:
            path.moveTo(QPointF(ax, ay))
            path.quadTo(cx, cy, bx, by)
        painter.drawPath(path)
