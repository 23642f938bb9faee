"""The minimap: the whole drawing scaled down in a corner of the canvas, with the viewport.

A click or a drag in it centres the view there. The picture is the overview's, painted once
per drawing, theme and colouring, so a frame of the minimap costs one image and a rectangle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from xocview.ui.canvas.overview import render_overview
from xocview.ui.canvas.style import theme

if TYPE_CHECKING:
    from xocview.ui.canvas.view import GraphView

__all__ = ["MINIMAP_PIXELS", "Minimap"]

MINIMAP_PIXELS = 180  # longest side of the minimap
_PAD = 4


class Minimap(QWidget):
    """Follows ``view``: its document's drawing and the part of it on screen."""

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.view = view
        self._picture: tuple[tuple[object, ...], QImage] | None = None
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view")

    def _scale(self) -> float:
        d = self.view.doc.drawing
        return MINIMAP_PIXELS / max(d.width, d.height, 1.0)

    def place(self) -> None:
        """Size to the drawing's shape and sit in the bottom right corner of the viewport."""
        d = self.view.doc.drawing
        s = self._scale()
        w = max(24, round(d.width * s)) + 2 * _PAD
        h = max(24, round(d.height * s)) + 2 * _PAD
        port = self.view.viewport().geometry()
        self.setGeometry(port.right() - w - 8, port.bottom() - h - 8, w, h)

    def _image(self) -> QImage:
        view = self.view
        d = view.doc.drawing
        key = (id(d), view.theme_name, view.doc.heat_key)
        if self._picture is None or self._picture[0] != key:
            image = render_overview(d, theme(view.theme_name), self._scale(), view.doc.heat())
            self._picture = (key, image)
        return self._picture[1]

    def _to_scene(self, pos: QPointF) -> QPointF:
        s = self._scale()
        return QPointF((pos.x() - _PAD) / s, (pos.y() - _PAD) / s)

    def paintEvent(self, event: QPaintEvent) -> None:
        view = self.view
        style = theme(view.theme_name)
        d = view.doc.drawing
        s = self._scale()
        painter = QPainter(self)
        back = QColor(style.background)
        back.setAlpha(235)
        painter.setPen(QPen(style.frame, 1))
        painter.setBrush(back)
        painter.drawRect(QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5))
        painter.drawImage(QRectF(_PAD, _PAD, d.width * s, d.height * s), self._image())
        seen = view.mapToScene(view.viewport().rect()).boundingRect()
        painter.setPen(QPen(style.selection_pen.color(), 1.5))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawRect(
            QRectF(_PAD + seen.x() * s, _PAD + seen.y() * s, seen.width() * s, seen.height() * s)
        )
        painter.end()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.view.centerOn(self._to_scene(event.position()))
        event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self.view.centerOn(self._to_scene(event.position()))
        event.accept()
