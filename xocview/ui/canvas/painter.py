"""Painting a Drawing by level of detail: far out plain boxes, closer titles, close everything.

One function paints for the interactive view, PNG and SVG export alike. Only what meets the
exposed rectangle is painted (array filters, not item lookups), so a frame costs what is on
screen, not what is in the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter

from xocview.ui.canvas.drawing import BADGE, KIND_GROUP, KIND_TENSOR, ROW_H, Drawing
from xocview.ui.canvas.edge_paint import paint_edges
from xocview.ui.canvas.heat import INK, HeatLevels, heat_brushes, light_text
from xocview.ui.canvas.labels import Placement, place_labels, title_band
from xocview.ui.canvas.style import Style
from xocview.ui.canvas.tint import Tint

__all__ = [
    "LOD_DETAIL",
    "LOD_TITLES",
    "labels_placed",
    "no_labels",
    "paint_drawing",
    "placed_labels",
]

LOD_TITLES = 0.3  # pixels per scene unit from which titles are drawn
LOD_DETAIL = 0.65  # ... and from which attributes, curves, arrows and shape labels
_WHITE = QColor(255, 255, 255)  # titles on dark heat colours
_INK = QColor(*INK)  # titles on light heat colours, whatever the theme's text colour


def paint_drawing(
    painter: QPainter,
    d: Drawing,
    style: Style,
    rect: QRectF,
    scale: float,
    selected: int = -1,
    highlighted: set[int] | None = None,
    heat: HeatLevels | None = None,
    labels_later: Callable[[], None] | None = None,
    edges: bool = True,
    tint: Tint | None = None,
) -> None:
    """Paint the part of ``d`` inside ``rect`` (scene units) at ``scale`` pixels per unit.

    With ``heat``, node boxes take the heat colour of their level (a neutral fill where they
    have no value) instead of their category's colour; with ``tint``, the items it gives a
    code take its colour over either (a comparison's added, removed and changed nodes). With
    ``labels_later``, shape labels not placed yet are left out of this frame and
    ``labels_later()`` is called to have them placed elsewhere (placing weighs every label of
    the drawing: seconds at 100k boxes); without, they are placed here. ``edges=False``
    leaves the edges out (an overview of a huge drawing).
    """
    x0, y0, x1, y1 = rect.left(), rect.top(), rect.right(), rect.bottom()
    detail = scale >= LOD_DETAIL
    titles = scale >= LOD_TITLES
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, titles)
    _frames(painter, d, style, x0, y0, x1, y1, titles)
    if edges:
        paint_edges(
            painter,
            d,
            style,
            d.visible_edges(x0, y0, x1, y1),
            detail,
            highlighted or set(),
            (x0, y0, x1, y1),
        )
    if detail:
        if labels_later is not None and not labels_placed(d, style):
            labels_later()
        else:
            _labels(painter, d, style, x0, y0, x1, y1)
    items = d.visible(x0, y0, x1, y1)
    _boxes(painter, d, style, items, titles, detail, heat, tint)
    if selected >= 0:
        painter.setBrush(Qt.BrushStyle.NoBrush)
        # the neighbours: the ends of the highlighted edges
        painter.setPen(style.edge_pen_highlight)
        for e in highlighted or ():
            other = int(d.edge_dst[e]) if d.edge_src[e] == selected else int(d.edge_src[e])
            painter.drawRoundedRect(_rect(d, other, 2.0), 6, 6)
        painter.setPen(style.selection_pen)
        painter.drawRoundedRect(_rect(d, selected, 3.0), 6, 6)


def _rect(d: Drawing, i: int, grow: float = 0.0) -> QRectF:
    return QRectF(
        d.x[i] - d.w[i] / 2 - grow, d.y[i] - d.h[i] / 2 - grow, d.w[i] + 2 * grow, d.h[i] + 2 * grow
    )


def _frames(
    painter: QPainter,
    d: Drawing,
    style: Style,
    x0: float,
    y0: float,
    x1: float,
    y1: float,
    titles: bool,
) -> None:
    """The group frames meeting the rectangle, outermost first (frames are rectangles)."""
    boxes = _frame_boxes(d)
    shown = np.flatnonzero(
        (boxes[:, 2] >= x0) & (boxes[:, 0] <= x1) & (boxes[:, 3] >= y0) & (boxes[:, 1] <= y1)
    )
    if not len(shown):
        return
    pen = style.frame_pen if titles else style.frame_pen_far
    painter.setPen(pen)
    painter.setBrush(style.frame_brush)
    painter.drawRects([QRectF(a, b, c - a, e - b) for a, b, c, e in boxes[shown].tolist()])
    if not titles:
        return
    # the depth shows in the title: the outermost bold and dark, deeper ones lighter
    depth = d.frame_depth if len(d.frame_depth) == len(d.frames) else np.zeros(len(d.frames))
    kinds = style.frame_titles
    flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
    for k in shown.tolist():
        font, colour = kinds[min(int(depth[k]), len(kinds) - 1)]
        painter.setFont(font)
        painter.setPen(colour)
        painter.drawText(frame_title_rect(d.frames[k][1]), flags, f"\u2212  {d.frame_titles[k]}")


def _frame_boxes(d: Drawing) -> np.ndarray:
    """(x0, y0, x1, y1) of every frame, made once per drawing: a frame of a 30k-frame drawing
    must not cost two numpy reductions per frame per paint."""
    cached = d.paint_cache.get("frame_boxes")
    if cached is None:
        if d.frames:
            outlines = [outline for _, outline in d.frames]
            pts = np.concatenate(outlines)
            starts = np.cumsum([0] + [len(o) for o in outlines[:-1]])
            lo = np.minimum.reduceat(pts, starts, axis=0)
            hi = np.maximum.reduceat(pts, starts, axis=0)
            cached = np.concatenate([lo, hi], axis=1)
        else:
            cached = np.zeros((0, 4))
        d.paint_cache["frame_boxes"] = cached
    return cast(np.ndarray, cached)


def frame_title_rect(outline: np.ndarray) -> QRectF:
    """Where a frame's title (and its collapse control) is drawn and clicked (shape labels keep
    out of it)."""
    return QRectF(*title_band(outline))


_NO_VALUE, _HEAT, _TINT = -1, 1 << 20, 1 << 21  # fill codes of the far view besides categories


_Categories = tuple[list[str], np.ndarray, list[QRectF]]


def _categories(d: Drawing) -> _Categories:
    """Category names, each item's category index and its rectangle, made once per drawing."""
    cached = d.paint_cache.get("categories")
    if cached is None:
        names = sorted(set(d.category))
        index = {name: k for k, name in enumerate(names)}
        codes = np.fromiter((index[c] for c in d.category), dtype=np.int64, count=d.count)
        cached = (names, codes, [_rect(d, i) for i in range(d.count)])
        d.paint_cache["categories"] = cached
    return cast(_Categories, cached)


def _far_fills(d: Drawing, codes: np.ndarray, heat: HeatLevels | None) -> np.ndarray:
    """A fill code per item: its category's index, or _HEAT + level, or _NO_VALUE."""
    if heat is None:
        return codes
    node = d.kind != KIND_TENSOR
    return np.where(node, np.where(heat.levels >= 0, _HEAT + heat.levels, _NO_VALUE), codes)


def _far_boxes(
    painter: QPainter,
    d: Drawing,
    style: Style,
    items: np.ndarray,
    heat: HeatLevels | None,
    tint: Tint | None = None,
) -> None:
    """Far out, plain rectangles without outlines: one call per fill, not one per box."""
    painter.setPen(Qt.PenStyle.NoPen)
    names, codes, rects = _categories(d)
    fills = _far_fills(d, codes, heat)
    if tint is not None:
        fills = np.where(tint.codes >= 0, _TINT + tint.codes, fills)
    fills = fills[items]
    order = np.argsort(fills, kind="stable")
    sorted_fills = fills[order]
    starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_fills)) + 1])
    for group, start in zip(np.split(items[order], starts[1:]), starts.tolist(), strict=True):
        code = int(sorted_fills[start])
        if tint is not None and code >= _TINT:
            painter.setBrush(tint.brushes[code - _TINT])
        elif code >= _HEAT:
            painter.setBrush(heat_brushes()[code - _HEAT])
        elif code == _NO_VALUE:
            painter.setBrush(style.fill("no_value"))
        else:
            painter.setBrush(style.fill(names[code]))
        painter.drawRects([rects[i] for i in group.tolist()])


def labels_placed(d: Drawing, style: Style) -> bool:
    """Whether ``placed_labels`` has its answer for ``d`` in ``style``'s font already."""
    cached = d.paint_cache.get("labels")
    return isinstance(cached, tuple) and cached[0] == ("labels", style.label_font.key())


def placed_labels(d: Drawing, style: Style, stop: Callable[[], bool] | None = None) -> Placement:
    """Where ``d``'s shape labels go in ``style``'s label font: placed once per drawing and
    font, since placing weighs every label against its neighbours (``stop``: see
    ``place_labels``)."""
    font = style.label_font
    key = ("labels", font.key())
    cached = d.paint_cache.get("labels")
    if not (isinstance(cached, tuple) and cached[0] == key):
        metrics = QFontMetricsF(font)
        line = max(metrics.height(), metrics.lineSpacing())  # two-line labels: Qt's spacing
        cached = (key, place_labels(d, metrics.horizontalAdvance, line, stop))
        d.paint_cache["labels"] = cached
    return cast(tuple[object, Placement], cached)[1]


def no_labels(d: Drawing, style: Style) -> None:
    """Paint ``d`` without shape labels from now on (placing them failed: out of memory)."""
    empty = np.empty(0)
    none = Placement(
        empty, empty, empty, empty, [], empty.astype(np.int64), empty.astype(np.int64), 0
    )
    d.paint_cache["labels"] = (("labels", style.label_font.key()), none)


def _labels(
    painter: QPainter, d: Drawing, style: Style, x0: float, y0: float, x1: float, y1: float
) -> None:
    """The placed shape labels that meet the exposed rectangle, each on a halo of the
    background colour, so that an edge passing under a label does not cut its text."""
    placed = placed_labels(d, style)
    shown = placed.visible(x0, y0, x1, y1).tolist()
    if not shown:
        return
    rects = [QRectF(placed.x[k], placed.y[k], placed.w[k], placed.h[k]) for k in shown]
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(style.label_halo)
    for r in rects:
        painter.drawRoundedRect(r, 3, 3)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.setFont(style.label_font)
    painter.setPen(style.text)
    for r, k in zip(rects, shown, strict=True):
        painter.drawText(r, Qt.AlignmentFlag.AlignCenter, placed.text[k])


def _boxes(
    painter: QPainter,
    d: Drawing,
    style: Style,
    items: np.ndarray,
    titles: bool,
    detail: bool,
    heat: HeatLevels | None = None,
    tint: Tint | None = None,
) -> None:
    if not titles:
        _far_boxes(painter, d, style, items, heat, tint)
        return
    painter.setPen(style.border)
    brushes = heat_brushes() if heat is not None else None
    levels = heat.levels if heat is not None else None
    tints = tint.codes if tint is not None else None
    for i in items.tolist():
        if tint is not None and tints is not None and tints[i] >= 0:
            painter.setBrush(tint.brushes[int(tints[i])])
        elif brushes is not None and levels is not None and d.kind[i] != KIND_TENSOR:
            level = int(levels[i])
            painter.setBrush(brushes[level] if level >= 0 else style.fill("no_value"))
        else:
            painter.setBrush(style.fill(d.category[i]))
        r = _rect(d, i)
        if d.kind[i] == KIND_TENSOR:
            painter.drawRoundedRect(r, r.height() / 2, r.height() / 2)
        else:
            painter.drawRoundedRect(r, 5, 5)
    painter.setPen(style.text)
    white = light_text() if heat is not None else None
    for i in items.tolist():
        r = _rect(d, i)
        rows = d.rows[i] if d.rows else ()
        if rows:  # title and detail keep the top of the box; the weight rows fill the rest
            r.setHeight(r.height() - len(rows) * ROW_H - 4.0)
        if d.kind[i] == KIND_GROUP:  # the "+" badge keeps a margin of its own on both sides
            badge = QRectF(r.right() - BADGE, r.top() + 2, BADGE - 2, 14)
            r = r.adjusted(BADGE, 0, -BADGE, 0)
        if tint is not None and tints is not None and tints[i] >= 0:
            painter.setPen(tint.text_colour(int(tints[i])))
        elif white is not None and levels is not None:
            level = int(levels[i])
            if level < 0:
                painter.setPen(style.text)  # the theme's neutral fill: the theme's text
            else:
                painter.setPen(_WHITE if white[level] else _INK)
        elif tint is not None:  # after a tinted box: the theme's text again
            painter.setPen(style.text)
        title_font = style.detail_font if d.kind[i] == KIND_TENSOR else style.title_font
        if detail and d.detail[i]:
            top = QRectF(r.left(), r.top() + 4, r.width(), r.height() / 2 - 2)
            bottom = QRectF(r.left(), r.center().y() + 1, r.width(), r.height() / 2 - 5)
            painter.setFont(title_font)
            painter.drawText(top, Qt.AlignmentFlag.AlignCenter, _fit(painter, d, i, 0, r))
            painter.setFont(style.detail_font)
            painter.drawText(bottom, Qt.AlignmentFlag.AlignCenter, _fit(painter, d, i, 1, r))
        else:
            painter.setFont(title_font)
            painter.drawText(r, Qt.AlignmentFlag.AlignCenter, _fit(painter, d, i, 0, r))
        if d.kind[i] == KIND_GROUP and detail:
            painter.drawText(badge, Qt.AlignmentFlag.AlignCenter, "+")
        if rows and detail:
            _rows(painter, d, i, r, style)


def _rows(painter: QPainter, d: Drawing, i: int, r: QRectF, style: Style) -> None:
    """Item ``i``'s folded weights below its title rectangle ``r``, one elided row each."""
    painter.setFont(style.detail_font)
    pen = painter.pen()
    painter.setPen(style.border)
    painter.drawLine(QPointF(r.left() + 1, r.bottom()), QPointF(r.right() - 1, r.bottom()))
    painter.setPen(pen)
    for k in range(len(d.rows[i])):
        row = QRectF(r.left() + 6, r.bottom() + 2 + k * ROW_H, r.width() - 12, ROW_H)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(row, flags, _fit(painter, d, i, 2 + k, r))


def _fit(painter: QPainter, d: Drawing, i: int, line: int, r: QRectF) -> str:
    """Item ``i``'s title (line 0), detail (line 1) or weight row (line 2 on) elided to its box
    in the painter's font.

    Boxes are sized from character counts, and wide glyphs can still overflow them; the elided
    text is made once per drawing and line.
    """
    fitted = cast(dict[tuple[int, int], str], d.paint_cache.setdefault("fitted", {}))
    key = (i, line)
    text = fitted.get(key)
    if text is None:
        full = d.title[i] if line == 0 else d.detail[i] if line == 1 else d.rows[i][line - 2]
        width = max(int(r.width()) - (8 if line < 2 else 12), 8)
        text = fitted[key] = painter.fontMetrics().elidedText(
            full, Qt.TextElideMode.ElideRight, width
        )
    return text
