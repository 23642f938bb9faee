"""Issue 30: the minimap and the heat legend never cover the box under the cursor or the
selected box: they step to another corner of the canvas (before, the minimap sat bottom
right and the legend bottom left whatever they hid)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication

from tests.conftest import REPO
from xocview.ui.canvas.corners import BOTTOM_LEFT, BOTTOM_RIGHT, TOP_LEFT, place
from xocview.ui.canvas.drawing import KIND_TENSOR
from xocview.ui.canvas.view import GraphView

TIMED = REPO / "sample_graphs" / "tiny_transformer.json"  # stores times: a heat legend shows


@pytest.fixture(autouse=True)
def _overlays_on():  # type: ignore[no-untyped-def]
    GraphView.overlays.update(minimap=True, legend=True)
    yield
    GraphView.overlays.update(minimap=True, legend=True)


def open_view(qtbot, window) -> GraphView:  # type: ignore[no-untyped-def]
    window.open_path(TIMED)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    view = window.tabs.currentWidget()
    view.zoom_to(1.0)
    qtbot.waitUntil(lambda: view.minimap.isVisible(), timeout=5000)
    assert view.doc.heat() is not None
    return view


def box_on_screen(view: GraphView, k: int) -> QRectF:
    d = view.doc.drawing
    box = QRectF(d.x[k] - d.w[k] / 2, d.y[k] - d.h[k] / 2, d.w[k], d.h[k])
    return view.mapFromScene(box).boundingRect().toRectF()


def minimap_on_screen(view: GraphView) -> QRectF:
    offset = view.viewport().geometry().topLeft()
    return QRectF(view.minimap.geometry().translated(-offset))


def bring_under(view: GraphView, spot: QRectF) -> int:
    """Scroll so that a node box sits under ``spot`` (viewport pixels); returns its item."""
    d = view.doc.drawing
    shift = QPointF(view.viewport().rect().center()) - spot.center()
    for k in range(d.count):  # the first node the view can scroll there
        if d.kind[k] == KIND_TENSOR:
            continue
        view.centerOn(QPointF(d.x[k], d.y[k]) + shift / view.scale_factor)
        if box_on_screen(view, k).intersects(spot):
            return k
    raise AssertionError("the view could not scroll a box there")


def hover(view: GraphView, at: QPointF) -> None:
    """The cursor moves over the canvas to ``at`` (viewport pixels)."""
    global_at = QPointF(view.viewport().mapToGlobal(at.toPoint()))
    event = QMouseEvent(
        QEvent.Type.MouseMove,
        at,
        global_at,
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(view.viewport(), event)


def test_the_minimap_steps_aside_from_the_box_under_the_cursor(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_view(qtbot, window)
    k = bring_under(view, minimap_on_screen(view))
    view.viewport().grab()  # a frame: the minimap follows the view
    assert minimap_on_screen(view).intersects(box_on_screen(view, k))  # it covers the box

    hover(view, box_on_screen(view, k).center())
    view.viewport().grab()
    assert view.minimap.isVisible()
    assert not minimap_on_screen(view).intersects(box_on_screen(view, k))

    hover(view, QPointF(2, 2))  # the cursor leaves the box: the minimap goes back
    view.viewport().grab()
    assert minimap_on_screen(view).intersects(box_on_screen(view, k))


def test_the_minimap_steps_aside_from_the_selected_box(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_view(qtbot, window)
    k = bring_under(view, minimap_on_screen(view))
    view.viewport().grab()
    assert minimap_on_screen(view).intersects(box_on_screen(view, k))
    view.doc.select_node(int(view.doc.drawing.item_node[k]))
    view.viewport().grab()
    assert not minimap_on_screen(view).intersects(box_on_screen(view, k))


def test_the_legend_steps_aside_from_the_box_under_the_cursor(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_view(qtbot, window)
    view.zoom_to(2.5)  # a narrow graph: boxes wide enough to reach the left edge
    view.viewport().grab()  # paints the legend, which says where
    legend = QRectF(view.minimap.legend_rect)
    assert legend.isValid()
    k = bring_under(view, legend)
    view.viewport().grab()
    assert view.minimap.legend_rect.intersects(box_on_screen(view, k))

    hover(view, box_on_screen(view, k).center())
    view.viewport().grab()
    now = view.minimap.legend_rect
    assert not now.intersects(box_on_screen(view, k))
    assert not now.intersects(minimap_on_screen(view))  # nor over the minimap


def test_place_takes_the_first_clear_corner_else_the_least_covered() -> None:
    port, size = QRectF(0, 0, 400, 300), QSizeF(100, 50)
    order = (BOTTOM_RIGHT, BOTTOM_LEFT, TOP_LEFT)
    assert place(port, size, order) == QRectF(292, 242, 100, 50)
    assert place(port, size, order, [QRectF(350, 250, 10, 10)]) == QRectF(8, 242, 100, 50)
    everywhere = [QRectF(0, 0, 400, 300)]
    small = [QRectF(300, 250, 5, 5), QRectF(0, 200, 200, 100), QRectF(0, 0, 200, 100)]
    assert place(port, size, order, everywhere) == QRectF(292, 242, 100, 50)
    assert place(port, size, order, small) == QRectF(292, 242, 100, 50)
