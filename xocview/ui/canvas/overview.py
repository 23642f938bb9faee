"""The overview: far out on a big graph, one cached picture of the whole drawing."""

from __future__ import annotations

from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.heat import HeatLevels
from xocview.ui.canvas.painter import paint_drawing
from xocview.ui.canvas.style import Style
from xocview.ui.canvas.tint import Tint

__all__ = ["OVERVIEW_FROM_ITEMS", "OVERVIEW_PIXELS", "overview_scale", "render_overview"]

OVERVIEW_FROM_ITEMS = 3000  # graphs with at least this many boxes get a cached overview
OVERVIEW_PIXELS = 4096  # longest side of the overview picture
# Above this many edges the overview shows boxes and frames only: at a few pixels a box the
# edges of a huge drawing are a grey wash, and making them would hold the window for seconds.
OVERVIEW_MAX_EDGES = 20_000


def overview_scale(d: Drawing) -> float:
    return OVERVIEW_PIXELS / max(d.width, d.height, 1.0)


def render_overview(
    d: Drawing, style: Style, scale: float, heat: HeatLevels | None = None, tint: Tint | None = None
) -> QImage:
    """The whole drawing at ``scale`` (boxes, and straight edges unless there are more than
    ``OVERVIEW_MAX_EDGES``), painted once."""
    image = QImage(
        max(1, round(d.width * scale)),
        max(1, round(d.height * scale)),
        QImage.Format.Format_ARGB32_Premultiplied,
    )
    image.fill(style.background)
    painter = QPainter(image)
    painter.scale(scale, scale)
    paint_drawing(
        painter,
        d,
        style,
        QRectF(0, 0, d.width, d.height),
        scale,
        heat=heat,
        edges=len(d.edges) <= OVERVIEW_MAX_EDGES,
        tint=tint,
    )
    painter.end()
    return image
