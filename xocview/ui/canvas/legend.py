"""The heat legend: what the colours mean, painted over the canvas in viewport pixels."""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QRect, QRectF, QSizeF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QLinearGradient, QPainter, QPen

from xocview.model.analyses.metrics import METRIC_MODE
from xocview.model.analyses.profile import format_ms
from xocview.ui.canvas.heat import LEVELS, HeatLevels, heat_colour
from xocview.ui.canvas.style import Style

__all__ = ["LEGEND_TITLES", "format_value", "legend_title", "paint_legend"]

LEGEND_TITLES = {
    "time": "time per node",
    "flops": "FLOPs per node",
    "params": "parameters per node",
}
_BAR_W, _BAR_H, _PAD = 180.0, 10.0, 8.0


def format_value(value: float, mode: str) -> str:
    """A legend or table value: milliseconds as the Profile dock shows them, counts with K/M/G."""
    if not math.isfinite(value):
        return "-"
    if mode == "time":
        return format_ms(value)
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}"
    return f"{value:.3g}"


def legend_title(heat: HeatLevels, mode: str) -> str:
    """``time per node from onnxruntime (log)``: the measure, whose it is when the heat says,
    and the scale."""
    source = f" from {heat.source}" if heat.source else ""
    scale = "log" if heat.log else "linear"
    if mode.startswith(METRIC_MODE):  # an imported metric: performance.<name>
        return f"{mode[len(METRIC_MODE) :]} per node{source} ({scale})"
    return f"{LEGEND_TITLES.get(mode, mode)}{source} ({scale})"


def paint_legend(
    painter: QPainter,
    viewport: QRect,
    heat: HeatLevels,
    mode: str,
    style: Style,
    place: Callable[[QSizeF], QRectF] | None = None,
) -> QRectF:
    """A gradient bar with the range's ends under a title that names the measure, its source
    (the engine of measured times) and the scale; bottom left of ``viewport``, or where
    ``place(size)`` puts it (the minimap's ``place_legend``: out of the way of the box under
    the cursor). Returns where it was painted."""
    font = style.detail_font
    metrics = QFontMetricsF(font)
    line = metrics.height()
    title = legend_title(heat, mode)
    size = QSizeF(
        max(_BAR_W, metrics.horizontalAdvance(title) + 1) + 2 * _PAD,
        _PAD * 2 + line * 2 + _BAR_H + 4,
    )
    if place is not None:
        box = place(size)
    else:
        box = QRectF(viewport.left() + 12, viewport.bottom() - 12 - size.height(), 0, 0)
        box.setSize(size)
    back = QColor(style.background)
    back.setAlpha(225)
    painter.setPen(QPen(style.frame, 1))
    painter.setBrush(back)
    painter.drawRoundedRect(box, 4, 4)
    painter.setFont(font)
    painter.setPen(style.text)
    painter.drawText(
        QRectF(box.left() + _PAD, box.top() + _PAD, box.width() - 2 * _PAD, line), title
    )
    bar = QRectF(box.left() + _PAD, box.top() + _PAD + line + 2, _BAR_W, _BAR_H)
    gradient = QLinearGradient(bar.topLeft(), bar.topRight())
    for k in range(0, LEVELS, 32):
        gradient.setColorAt(k / (LEVELS - 1), heat_colour(k))
    gradient.setColorAt(1.0, heat_colour(LEVELS - 1))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(gradient)
    painter.drawRect(bar)
    painter.setPen(style.text)
    labels = QRectF(bar.left(), bar.bottom() + 2, _BAR_W, line)
    if math.isfinite(heat.low):
        painter.drawText(labels, Qt.AlignmentFlag.AlignLeft, format_value(heat.low, mode))
        painter.drawText(labels, Qt.AlignmentFlag.AlignRight, format_value(heat.high, mode))
    else:
        painter.drawText(labels, Qt.AlignmentFlag.AlignHCenter, "no values yet")
    return box
