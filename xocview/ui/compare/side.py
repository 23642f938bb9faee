"""One side of a comparison: a graph view coloured by the comparison, that says when it zooms.

Every zoom of a GraphView goes through ``zoom_by`` or ``fit``; this view announces both
(``zoomed``), so that the other side can follow a zoom that moved no scroll bar.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QWidget

from xocview.ui.canvas.style import theme
from xocview.ui.canvas.tint import Tint
from xocview.ui.canvas.view import GraphView
from xocview.ui.compare.colours import SideColours
from xocview.ui.document import Document

__all__ = ["SideView"]


class SideView(GraphView):
    """A GraphView of one side, its boxes tinted by ``colours``."""

    zoomed = Signal()

    def __init__(
        self,
        doc: Document,
        colours: SideColours,
        parent: QWidget | None = None,
        theme_name: str = "light",
    ) -> None:
        self.colours = colours
        super().__init__(doc, parent, theme_name)

    def tint(self) -> Tint | None:
        return self.colours.tint(self.doc.drawing, theme(self.theme_name))

    def zoom_by(self, factor: float) -> None:
        super().zoom_by(factor)
        self.zoomed.emit()

    def fit(self) -> None:
        super().fit()
        self.zoomed.emit()

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        super().drawForeground(painter, rect)
        painter.save()
        painter.resetTransform()  # the key sits in viewport pixels
        style = theme(self.theme_name)
        self.colours.paint_key(painter, self.viewport().rect(), style, self.minimap.place_legend)
        painter.restore()
