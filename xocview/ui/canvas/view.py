"""The graph view: pan, zoom around the cursor, select, toggle groups, walk with the arrows.

The scene holds no items: the view paints the document's Drawing in drawBackground, so a
frame costs what is on screen whatever the size of the graph.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from PySide6.QtCore import QPointF, QRect, QRectF, Qt, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QImage,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QResizeEvent,
    QWheelEvent,
)
from PySide6.QtWidgets import QGraphicsScene, QGraphicsView, QWidget

from xocview.model import edits
from xocview.ui.canvas.drawing import KIND_GROUP, Drawing
from xocview.ui.canvas.edit_menu import edit_menu
from xocview.ui.canvas.hit import hit_test
from xocview.ui.canvas.label_worker import LabelPlacer
from xocview.ui.canvas.legend import paint_legend
from xocview.ui.canvas.minimap import Minimap
from xocview.ui.canvas.overview import OVERVIEW_FROM_ITEMS, overview_scale, render_overview
from xocview.ui.canvas.painter import paint_drawing
from xocview.ui.canvas.place import PlaceKeeper, ViewPlace
from xocview.ui.canvas.style import theme
from xocview.ui.canvas.tint import Tint
from xocview.ui.canvas.walk import next_item
from xocview.ui.commands import Reversible, perform
from xocview.ui.document import Document

__all__ = ["GraphView", "ViewPlace"]  # ViewPlace: from place.py, for the window

MIN_SCALE, MAX_SCALE = 0.002, 4.0
LEGIBLE_SCALE = 0.6  # below this zoom box labels cannot be read: the first view is not fit


_MARGIN = 40.0


class GraphView(QGraphicsView):
    """Shows one Document; every change of the document repaints it."""

    dirty_changed = Signal(bool)  # forwarded from the document, for the window's markers
    refused = Signal(str)  # an edit asked from the canvas was refused: the reason
    # the floating overlays every view shows (View > Minimap, View > Legend): one setting for
    # the whole application, so that a new tab shows what the others do
    overlays: ClassVar[dict[str, bool]] = {"minimap": True, "legend": True}

    @classmethod
    def set_overlay(cls, name: str, on: bool) -> None:
        """Show or hide an overlay ("minimap" or "legend") in every view from now on."""
        cls.overlays[name] = on

    def __init__(
        self, doc: Document, parent: QWidget | None = None, theme_name: str = "light"
    ) -> None:
        super().__init__(parent)
        self.doc = doc
        self.theme_name = theme_name
        self.setScene(QGraphicsScene(self))
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.FullViewportUpdate)
        # Everything is painted as the background; Qt keeps it in a pixmap until ``refresh``
        # (or a zoom) says it changed, so that a repaint with nothing new (the status bar
        # showing progress, a minimap picture arriving) costs a copy, not a frame: 0.3 s a
        # frame on a 272-layer GPT-2, several times while a layout ran in the background.
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheBackground)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        # A dock that appears below (Profile after a run, Problems after an edit) shrinks the
        # canvas: what is on screen stays where it was rather than sliding by half the dock
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        self.setDragMode(QGraphicsView.DragMode.ScrollHandDrag)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        doc.drawing_changed.connect(self._on_drawing)
        doc.busy_changed.connect(self._on_busy)
        doc.selection_changed.connect(self.refresh)
        doc.heat_changed.connect(self.refresh)
        self._overview: tuple[tuple[object, ...], QImage] | None = None
        self._sync_scene_rect()
        self._press: QPointF | None = None
        self._first_view_pending = False
        self.places = PlaceKeeper(self)  # the user's place through relayouts and reloads
        doc.failed.connect(self._drop_first_view)
        self.minimap = Minimap(self)
        self.labels = LabelPlacer(self, lambda: self.doc.title)
        self.labels.ready.connect(self.refresh)
        self.horizontalScrollBar().valueChanged.connect(self._follow_minimap)
        self.verticalScrollBar().valueChanged.connect(self._follow_minimap)
        self._follow_minimap()

    # -- painting -------------------------------------------------------------------------

    @property
    def scale_factor(self) -> float:
        return float(self.transform().m11())

    def refresh(self) -> None:
        """Paint again: what the canvas shows changed (the cached picture is dropped)."""
        self.resetCachedContent()
        self.viewport().update()

    def set_theme(self, name: str) -> None:
        self.theme_name = name
        self.refresh()

    def tint(self) -> Tint | None:
        """Colours that replace some boxes' fills in this view (a comparison's), or None."""
        return None

    def drawBackground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        rect = QRectF(rect)
        style = theme(self.theme_name)
        painter.fillRect(rect, style.background)
        if self._use_overview():
            self._paint_overview(painter, rect)
            return
        item = self.doc.selected_item()
        highlighted: set[int] = set()
        if item >= 0:
            d = self.doc.drawing
            touching = (d.edge_src == item) | (d.edge_dst == item)
            highlighted = set(np.flatnonzero(touching).tolist())
        paint_drawing(
            painter,
            self.doc.drawing,
            style,
            rect,
            self.scale_factor,
            item,
            highlighted,
            self.doc.heat(),
            labels_later=lambda: self.labels.request(self.doc.drawing, style),
            tint=self.tint(),
        )
        if self.doc.also_selected:  # nodes added with Ctrl+click
            d = self.doc.drawing
            painter.setPen(style.selection_pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            for node in self.doc.also_selected:
                for k in np.flatnonzero(d.item_node == node).tolist():
                    painter.drawRoundedRect(
                        QRectF(
                            d.x[k] - d.w[k] / 2 - 3, d.y[k] - d.h[k] / 2 - 3, d.w[k] + 6, d.h[k] + 6
                        ),
                        6,
                        6,
                    )

    def drawForeground(self, painter: QPainter, rect: QRectF | QRect) -> None:
        self._follow_minimap()
        heat = self.doc.heat() if self.overlays["legend"] else None
        if heat is None:
            return
        painter.save()
        painter.resetTransform()  # the legend sits in viewport pixels, not on the graph
        paint_legend(
            painter,
            self.viewport().rect(),
            heat,
            self.doc.colour_by,
            theme(self.theme_name),
            self.minimap.place_legend,  # out of the way of the box under the cursor
        )
        painter.restore()

    def _use_overview(self) -> bool:
        """Far out on a big graph, one cached picture of the whole drawing is painted instead
        of every box, so that a frame stays within budget however many nodes there are."""
        d = self.doc.drawing
        if d.count < OVERVIEW_FROM_ITEMS:
            return False
        return self.scale_factor <= overview_scale(d) * 1.5

    def _paint_overview(self, painter: QPainter, rect: QRectF) -> None:
        d = self.doc.drawing
        tint = self.tint()
        key = (id(d), self.theme_name, self.doc.heat_key, id(tint))
        if self._overview is None or self._overview[0] != key:
            style = theme(self.theme_name)
            picture = render_overview(d, style, overview_scale(d), self.doc.heat(), tint)
            self._overview = (key, picture)
        image = self._overview[1]
        painter.drawImage(QRectF(0, 0, d.width, d.height), image)
        item = self.doc.selected_item()
        if item >= 0:  # the selection stays visible far out
            painter.setPen(theme(self.theme_name).selection_pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRect(
                QRectF(d.x[item] - d.w[item] / 2, d.y[item] - d.h[item] / 2, d.w[item], d.h[item])
            )

    def _sync_scene_rect(self) -> None:
        self.scene().setSceneRect(self._drawing_rect())

    def _drawing_rect(self) -> QRectF:
        d = self.doc.drawing
        return QRectF(-_MARGIN, -_MARGIN, d.width + 2 * _MARGIN, d.height + 2 * _MARGIN)

    def _on_drawing(self) -> None:
        centre = self.mapToScene(self.viewport().rect().center())
        self.labels.show(self.doc.drawing)
        self._sync_scene_rect()
        self.places.after_relayout(centre, self._first_view_pending)
        if self._first_view_pending:
            self.first_view()
        self.refresh()
        self._follow_minimap()

    def _on_busy(self, busy: bool) -> None:
        """A relayout runs: the labels of the drawing it replaces stop, so that the layout
        has the interpreter to itself (placing 130k labels takes seconds); when it is
        cancelled, the painter asks for them again."""
        if busy:
            self.labels.pause()
        else:
            self.labels.show(self.doc.drawing)
            self.refresh()

    def _follow_minimap(self) -> None:
        self.minimap.follow()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._follow_minimap()

    # -- zoom and pan ---------------------------------------------------------------------

    def zoom_by(self, factor: float) -> None:
        target = min(MAX_SCALE, max(MIN_SCALE, self.scale_factor * factor))
        factor = target / self.scale_factor
        self.scale(factor, factor)

    def zoom_to(self, scale: float) -> None:
        self.zoom_by(scale / self.scale_factor)

    def fit(self) -> None:
        self.fitInView(self._drawing_rect(), Qt.AspectRatioMode.KeepAspectRatio)
        if self.scale_factor > 1.0:
            self.zoom_to(1.0)

    def first_view(self) -> None:
        """Fit a graph that is legible at fit; else open at a legible zoom on its inputs.

        The inputs are the top of the layout (its left in left-to-right mode); the minimap
        reaches the rest. While a relayout runs in a worker, it waits for the new drawing.
        """
        self._first_view_pending = self.doc.busy
        self.fit()
        if self.scale_factor >= LEGIBLE_SCALE:
            return
        d = self.doc.drawing
        if d.count == 0:
            return
        self.zoom_to(1.0)
        port = self.viewport().rect()
        half_w = port.width() / 2 / self.scale_factor
        half_h = port.height() / 2 / self.scale_factor
        x, y = self._inputs_at(d)
        if self.doc.direction == "LR":  # inputs at the left edge, centred across
            self.centerOn(QPointF(-_MARGIN + half_w, max(y, -_MARGIN + half_h)))
        else:  # inputs at the top edge; a wrapped drawing shows its first column
            self.centerOn(QPointF(max(x, -_MARGIN + half_w), -_MARGIN + half_h))
        self._follow_minimap()

    @staticmethod
    def _inputs_at(d: Drawing) -> tuple[float, float]:
        """Where the graph starts: its input boxes, else the first boxes of the layout (the
        leftmost of those on the top row, since columns of a wrapped drawing all start
        there)."""
        inputs = np.array([c == "input" for c in d.category], dtype=bool)
        top = d.y - d.h / 2
        if inputs.any():
            first = inputs & (top <= float(top[inputs].min()) + 1.0)
        else:
            first = top <= float(top.min()) + 1.0
            first &= d.x <= float(d.x[first].min()) + 1.0
        return float(d.x[first].mean()), float(d.y[first].mean())

    def place(self) -> ViewPlace:
        """Where the user is: open groups, selection, zoom and the centre of the view."""
        return self.places.snapshot()

    def restore(self, place: ViewPlace) -> None:
        """Go back to ``place``, taken from a view of the same file before a reload."""
        self._first_view_pending = False
        self.places.restore(place)
        self._follow_minimap()

    def _drop_first_view(self) -> None:
        self._first_view_pending = False  # the relayout failed: the old picture stays

    def focus_selection(self) -> None:
        item = self.doc.selected_item()
        if item >= 0:
            d = self.doc.drawing
            if self.scale_factor < 0.7:
                self.zoom_to(1.0)
            self.centerOn(QPointF(d.x[item], d.y[item]))

    def wheelEvent(self, event: QWheelEvent) -> None:
        steps = event.angleDelta().y() / 120.0
        if steps:
            self.zoom_by(1.15**steps)
        event.accept()

    # -- clicks ---------------------------------------------------------------------------

    def _hit(self, pos: QPointF) -> tuple[str, int]:
        """What is under a viewport point: ("item", k), ("frame", group), ("edge", e) or none."""
        p = self.mapToScene(pos.toPoint())
        return hit_test(self.doc.drawing, p, 6.0 / max(self.scale_factor, 1e-6))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._press = event.position()
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        if self._press is None or event.button() != Qt.MouseButton.LeftButton:
            return
        moved = (event.position() - self._press).manhattanLength()
        self._press = None
        if moved > 4:
            return  # a drag (pan), not a click
        what, k = self._hit(event.position())
        d = self.doc.drawing
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        if what == "item":
            if d.item_node[k] >= 0 and ctrl:
                self.doc.toggle_in_selection(int(d.item_node[k]))
            elif d.item_node[k] >= 0:
                self.doc.select_node(int(d.item_node[k]))
            else:
                self.doc.select_tensor(int(d.item_tensor[k]))
        elif what == "edge":
            self.doc.select_tensor(int(d.edge_tensor[k]))
        elif what == "none":
            self.doc.clear_selection()

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        what, k = self._hit(event.position())
        d = self.doc.drawing
        if what == "item" and d.kind[k] == KIND_GROUP:
            self.toggle_group(int(d.item_node[k]), event.position())
        elif what == "frame":
            self.toggle_group(k, event.position())
        else:
            super().mouseDoubleClickEvent(event)

    def toggle_group(self, group: int, at: QPointF | None = None) -> None:
        """Toggle a group and keep it under the cursor (or where it was on screen)."""
        self.places.toggled = self.doc.graph.nodes[group].id
        self.doc.toggle(group)  # may finish later, in a worker, for a big graph

    # -- keyboard -------------------------------------------------------------------------

    def keyPressEvent(self, event: QKeyEvent) -> None:
        key = event.key()
        if key == Qt.Key.Key_0:
            self.fit()
        elif key == Qt.Key.Key_F:
            self.focus_selection()
        elif key in (Qt.Key.Key_Plus, Qt.Key.Key_Equal):
            self.zoom_by(1.25)
        elif key == Qt.Key.Key_Minus:
            self.zoom_by(0.8)
        elif key in (Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_Left, Qt.Key.Key_Right):
            shift = event.modifiers() & Qt.KeyboardModifier.ShiftModifier
            if shift or self.doc.selected_item() < 0:
                self.pan(key)  # nothing to walk from (or Shift held): move the view
            else:
                self.step(key)
        elif key == Qt.Key.Key_Escape:
            self.doc.clear_selection()
        elif key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.doc.selected_node >= 0:
            self.edit(edits.delete_node, self.doc.graph.nodes[self.doc.selected_node].id)
        else:
            super().keyPressEvent(event)

    # -- editing ----------------------------------------------------------------------------

    def edit(self, edit_fn: Callable[..., Reversible], *args: Any) -> bool:
        """Run a model edit through the undo stack; a refusal is announced by ``refused``."""
        refusal = perform(self.doc, edit_fn, *args)
        if refusal:
            self.refused.emit(refusal)
        return refusal is None

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        what, k = self._hit(QPointF(event.pos()))
        edit_menu(self, k if what == "item" else -1).exec(event.globalPos())

    def pan(self, key: int) -> None:
        """Scroll by a tenth of the view in the direction of an arrow key."""
        dx = {Qt.Key.Key_Left: -1, Qt.Key.Key_Right: 1}.get(Qt.Key(key), 0)
        dy = {Qt.Key.Key_Up: -1, Qt.Key.Key_Down: 1}.get(Qt.Key(key), 0)
        h, v = self.horizontalScrollBar(), self.verticalScrollBar()
        h.setValue(h.value() + dx * max(20, self.viewport().width() // 10))
        v.setValue(v.value() + dy * max(20, self.viewport().height() // 10))

    def step(self, key: int) -> None:
        """Move the selection to a predecessor (up), successor (down) or neighbour (sides)."""
        d = self.doc.drawing
        item = self.doc.selected_item()
        if item < 0:
            return
        toward = {Qt.Key.Key_Up: "up", Qt.Key.Key_Down: "down", Qt.Key.Key_Left: "left"}
        nxt = next_item(d, item, toward.get(Qt.Key(key), "right"))
        if nxt < 0:
            return
        if d.item_node[nxt] >= 0:
            self.doc.select_node(int(d.item_node[nxt]))
        else:
            self.doc.select_tensor(int(d.item_tensor[nxt]))
        self.ensureVisible(
            QRectF(d.x[nxt] - d.w[nxt] / 2, d.y[nxt] - d.h[nxt] / 2, d.w[nxt], d.h[nxt]), 40, 40
        )
