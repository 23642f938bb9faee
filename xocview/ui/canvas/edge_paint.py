"""Painting edges: curves with arrowheads up close, polylines far out, made once per drawing
and kept in its paint cache; a long route is stroked only where it meets the frame."""

from __future__ import annotations

import math
from typing import cast

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QPainter, QPainterPath, QPolygonF

from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.edge_pieces import CORNER, SHARED_FROM, corner_points, paint_shared
from xocview.ui.canvas.style import Style

__all__ = ["CORNER", "corner_points", "paint_edges"]

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1 in scene units


def _far_polyline(d: Drawing, e: int, rect: Rect | None = None) -> QPolygonF:
    """Edge ``e`` as a polyline, made on first use and kept with the drawing: far out a frame
    would otherwise make the same polygons again, and making all 128k of a big drawing at once
    would hold the window for a second and more. A long route is cut to ``rect``."""
    pts = d.edges[e]
    cut = _cut(pts, rect)
    if cut is not None:
        return QPolygonF([QPointF(px, py) for px, py in pts[cut[0] : cut[1]].tolist()])
    cache = cast(dict[int, QPolygonF], d.paint_cache.setdefault("far_edges", {}))
    polygon = cache.get(e)
    if polygon is None:
        polygon = cache[e] = QPolygonF([QPointF(px, py) for px, py in pts.tolist()])
    return polygon


def paint_edges(
    painter: QPainter,
    d: Drawing,
    style: Style,
    edges: np.ndarray,
    detail: bool,
    highlighted: set[int],
    rect: Rect,
) -> None:
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.setPen(style.edge_pen)
    if not detail:
        # One polyline per edge: stroking all of them as one path makes Qt's stroker work on
        # the whole path at once, minutes for the 14k edges of an expanded 20k-node graph.
        painter.setPen(style.edge_pen_far)
        for e in edges.tolist():
            painter.drawPolyline(_far_polyline(d, e, rect))
        painter.setPen(style.edge_pen_highlight)
        for e in highlighted:
            painter.drawPolyline(_far_polyline(d, e, rect))
        return
    later = [e for e in edges.tolist() if e in highlighted]
    plain = [e for e in edges.tolist() if e not in highlighted]
    if sum(len(d.edges[e]) for e in plain) > SHARED_FROM:  # many: shared routes stroked once
        paint_shared(painter, d, plain, rect)
        for e in plain:
            _arrow_in(painter, d.edges[e], style, rect)
    else:
        for e in plain:
            _edge(painter, d, e, style, rect)
    painter.setPen(style.edge_pen_highlight)
    for e in later:
        _edge(painter, d, e, style, rect)


_CLIP_FROM = 24  # routes with more points than this are cut to the part that meets the rect


def _cut(pts: np.ndarray, rect: Rect | None) -> tuple[int, int] | None:
    """The part of a long route to stroke in ``rect`` (``_within``); None: the whole route."""
    if rect is None or len(pts) <= _CLIP_FROM:
        return None
    i, j = _within(pts, rect)
    return (i, j) if i > 0 or j < len(pts) else None


def _within(pts: np.ndarray, rect: Rect) -> tuple[int, int]:
    """The points of the route from just before it first meets ``rect`` (grown by a corner
    and an arrowhead) to just after it last leaves: a long route (an attention mask's edge to
    the 272nd layer has 300 corners) is stroked only where it shows."""
    x0, y0, x1, y1 = rect
    m = CORNER + 8.0
    a, b = pts[:-1], pts[1:]
    meets = (
        (np.maximum(a[:, 0], b[:, 0]) >= x0 - m)
        & (np.minimum(a[:, 0], b[:, 0]) <= x1 + m)
        & (np.maximum(a[:, 1], b[:, 1]) >= y0 - m)
        & (np.minimum(a[:, 1], b[:, 1]) <= y1 + m)
    )
    hit = np.flatnonzero(meets)
    if not len(hit):
        return 0, 0
    return max(0, int(hit[0]) - 1), min(len(pts), int(hit[-1]) + 3)


def _curve(pts: np.ndarray) -> QPainterPath:
    """A route with its corners rounded (see ``corner_points``)."""
    path = QPainterPath(QPointF(*pts[0]))
    if len(pts) > 2:
        for (ax, ay), (cx, cy), (bx, by) in corner_points(pts).tolist():
            path.lineTo(ax, ay)
            path.quadTo(cx, cy, bx, by)
    path.lineTo(QPointF(*pts[-1]))
    return path


def _edge(
    painter: QPainter,
    d: Drawing,
    e: int,
    style: Style,
    rect: Rect | None = None,
) -> None:
    """Edge ``e`` as a curve with an arrowhead; curves are made once per drawing, except that
    a long route is cut to ``rect`` (its part there made for this frame)."""
    pts = d.edges[e]
    cut = _cut(pts, rect)
    if cut is not None:
        i, j = cut
        if j - i >= 2:
            painter.drawPath(_curve(pts[i:j]))
        if j == len(pts):
            _arrow(painter, pts[-2], pts[-1], style)
        return
    curves = cast(dict[int, QPainterPath], d.paint_cache.setdefault("curves", {}))
    path = curves.get(e)
    if path is None:
        path = curves[e] = _curve(pts)
    painter.drawPath(path)
    _arrow(painter, pts[-2], pts[-1], style)


def _arrow_in(painter: QPainter, pts: np.ndarray, style: Style, rect: Rect) -> None:
    """The arrowhead of a route, when its end is near ``rect``."""
    x, y = pts[-1]
    x0, y0, x1, y1 = rect
    m = CORNER + 8.0
    if len(pts) >= 2 and x0 - m <= x <= x1 + m and y0 - m <= y <= y1 + m:
        _arrow(painter, pts[-2], pts[-1], style)


def _arrow(painter: QPainter, a: np.ndarray, b: np.ndarray, style: Style) -> None:
    ang = math.atan2(b[1] - a[1], b[0] - a[0])
    size = 7.0
    left = QPointF(b[0] - size * math.cos(ang - 0.4), b[1] - size * math.sin(ang - 0.4))
    right = QPointF(b[0] - size * math.cos(ang + 0.4), b[1] - size * math.sin(ang + 0.4))
    brush = painter.brush()
    painter.setBrush(painter.pen().color())
    painter.drawPolygon(QPolygonF([QPointF(*b), left, right]))
    painter.setBrush(brush)
