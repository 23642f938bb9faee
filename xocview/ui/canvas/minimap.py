"""The minimap: the whole drawing scaled down in a corner of the canvas, with the viewport.

A click or a drag in it centres the view there. It never covers the box under the cursor or
the selected box: it steps to another corner of the canvas (as does the heat legend, which it
places too: ``place_legend``). The picture is the overview's, painted once
per drawing, theme and colouring, so a frame of the minimap costs one image and a rectangle.
For a big drawing the picture is painted in a worker thread (half a second for 12k boxes and
14k edges, which the GUI thread spent after every expand or collapse); the minimap shows its
frame and the viewport's rectangle meanwhile.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QPointF, QRectF, QSizeF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from xocview.ui.canvas.corners import BOTTOM_LEFT, BOTTOM_RIGHT, TOP_LEFT, TOP_RIGHT, place
from xocview.ui.canvas.drawing import Drawing, edge_points
from xocview.ui.canvas.heat import HeatLevels
from xocview.ui.canvas.overview import OVERVIEW_FROM_ITEMS, render_overview
from xocview.ui.canvas.style import Style, theme
from xocview.ui.canvas.tint import Tint
from xocview.ui.failure_text import failure_message
from xocview.ui.guard import tell

if TYPE_CHECKING:
    from xocview.ui.canvas.view import GraphView

__all__ = ["MINIMAP_PIXELS", "Minimap"]

MINIMAP_PIXELS = 180  # longest side of the minimap
_PAD = 4
# Pictures of drawings with fewer boxes and route points than these are quick to paint and
# painted at once; others in a worker (a 304-box first view of a 272-layer GPT-2 has routes
# of 576 corners along its columns).
_QUICK_POINTS = 20_000
# the corners each overlay tries, in order: the minimap bottom right, the legend bottom left
MINIMAP_CORNERS = (BOTTOM_RIGHT, BOTTOM_LEFT, TOP_RIGHT, TOP_LEFT)
LEGEND_CORNERS = (BOTTOM_LEFT, TOP_LEFT, BOTTOM_RIGHT, TOP_RIGHT)


class Minimap(QWidget):
    """Follows ``view``: its document's drawing and the part of it on screen."""

    _painted = Signal(object, object)  # (key, image) from the worker thread

    def __init__(self, view: GraphView) -> None:
        super().__init__(view)
        self.view = view
        self._picture: tuple[tuple[object, ...], QImage] | None = None
        self._pending: tuple[object, ...] | None = None
        self._followed: tuple[object, ...] = ()
        self._cursor: QPointF | None = None  # over the canvas, in viewport pixels
        self._clear: tuple[tuple[float, float, float, float], ...] = ()  # keep_clear() last
        self.legend_rect = QRectF()  # where the legend was painted last (viewport pixels)
        self._painted.connect(self._take)
        view.viewport().installEventFilter(self)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Overview: click or drag to move the view")

    def _scale(self) -> float:
        d = self.view.doc.drawing
        return MINIMAP_PIXELS / max(d.width, d.height, 1.0)

    def _key(self) -> tuple[object, ...]:
        """What the picture shows: the drawing, the theme and the colouring (a comparison's
        tint included)."""
        view = self.view
        return (id(view.doc.drawing), view.theme_name, view.doc.heat_key, id(view.tint()))

    def follow(self) -> None:
        """Show while part of the drawing is off screen, and repaint when what it shows
        changed. Only then: it floats over the viewport, so repainting it repaints the canvas
        beneath, whose foreground calls this again (an endless loop of frames, 0.1-0.2 s each
        on a big drawing, that kept the GUI thread busy while idle)."""
        view = self.view
        d = view.doc.drawing
        seen = view.mapToScene(view.viewport().rect()).boundingRect()
        state = (
            *self._key(),
            seen.getRect(),
            view.viewport().size().toTuple(),
            view.overlays["minimap"],
            self._clear_key(),
        )
        if state == self._followed:
            return
        self._followed = state
        whole = seen.contains(QRectF(0, 0, d.width, d.height))
        shown = not whole and view.overlays["minimap"]
        if shown:
            self.place()
        self.setVisible(shown)
        self.update()

    def place(self) -> None:
        """Size to the drawing's shape and sit in the bottom right corner of the viewport, or
        the first other corner where it covers neither the box under the cursor nor the
        selected one."""
        d = self.view.doc.drawing
        s = self._scale()
        w = max(24, round(d.width * s)) + 2 * _PAD
        h = max(24, round(d.height * s)) + 2 * _PAD
        port = QRectF(self.view.viewport().rect())
        at = place(port, QSizeF(w, h), MINIMAP_CORNERS, self.keep_clear())
        offset = self.view.viewport().geometry().topLeft()  # viewport pixels -> the view's
        self.setGeometry(at.toRect().translated(offset))

    def place_legend(self, size: QSizeF) -> QRectF:
        """Where a legend of ``size`` goes (viewport pixels): bottom left, or the first other
        corner clear of the box under the cursor, the selected box and the minimap."""
        clear = self.keep_clear()
        if self.isVisible():
            offset = self.view.viewport().geometry().topLeft()
            clear.append(QRectF(self.geometry().translated(-offset)))
        self.legend_rect = place(QRectF(self.view.viewport().rect()), size, LEGEND_CORNERS, clear)
        return self.legend_rect

    def keep_clear(self) -> list[QRectF]:
        """The boxes no overlay may cover, in viewport pixels: the one under the cursor and
        the selected one."""
        view = self.view
        d = view.doc.drawing
        items = [view.doc.selected_item()]
        if self._cursor is not None:
            p = view.mapToScene(self._cursor.toPoint())
            items.append(d.item_at(p.x(), p.y()))
        out = []
        for k in dict.fromkeys(i for i in items if 0 <= i < d.count):
            box = QRectF(d.x[k] - d.w[k] / 2, d.y[k] - d.h[k] / 2, d.w[k], d.h[k])
            out.append(view.mapFromScene(box).boundingRect().toRectF())
        return out

    def _clear_key(self) -> tuple[tuple[float, float, float, float], ...]:
        return tuple((r.x(), r.y(), r.width(), r.height()) for r in self.keep_clear())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Follow the cursor over the canvas: when the box under it changes, the overlays
        step out of its way (the legend is painted with the canvas's foreground)."""
        kind = event.type()
        if kind == QEvent.Type.MouseMove and isinstance(event, QMouseEvent):
            self._cursor = event.position()
        elif kind == QEvent.Type.Leave:
            self._cursor = None
        else:
            return False
        clear = self._clear_key()
        if clear != self._clear:
            self._clear = clear
            self.follow()
            if self.legend_rect.isValid():
                self.view.viewport().update()
        return False

    def _image(self) -> QImage | None:
        """The picture of the drawing as it is now, or None while a worker paints it."""
        view = self.view
        d = view.doc.drawing
        key = self._key()
        if self._picture is not None and self._picture[0] == key:
            return self._picture[1]
        args = (d, theme(view.theme_name), self._scale(), view.doc.heat(), view.tint())
        # small pictures are painted here, unless a layout runs in a worker: then every Qt
        # call of the painting waits for the interpreter, and a 4k-point picture takes 1 s
        quick = d.count < OVERVIEW_FROM_ITEMS and edge_points(d) < _QUICK_POINTS
        if quick and not view.doc.busy:
            self._picture = (key, render_overview(*args))
            return self._picture[1]
        if self._pending != key:
            self._pending = key
            threading.Thread(
                target=self._paint_apart, args=(key, *args), name="xocview-minimap", daemon=True
            ).start()
        return None

    def _paint_apart(
        self,
        key: tuple[object, ...],
        d: Drawing,
        style: Style,
        scale: float,
        heat: HeatLevels | None,
        tint: Tint | None,
    ) -> None:
        try:
            image = render_overview(d, style, scale, heat, tint)
        except Exception as e:  # no memory for the picture: the minimap stays empty
            tell(failure_message(self.view.doc.title, e, "draw its overview"))
            return
        with contextlib.suppress(RuntimeError):  # the view closed meanwhile
            self._painted.emit(key, image)

    def _take(self, key: tuple[object, ...], image: QImage) -> None:
        if key == self._key():
            self._picture = (key, image)
            self.update()

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
        image = self._image()
        if image is not None:
            painter.drawImage(QRectF(_PAD, _PAD, d.width * s, d.height * s), image)
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
