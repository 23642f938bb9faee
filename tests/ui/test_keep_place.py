"""The window keeps the user's place: after a run, an undo, a collapse and a reload the
selected box stays where it was on screen, and stays selected."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from PySide6.QtCore import QPointF

from tests.perf.onnx_models import transformer_like
from xocview.model import edits
from xocview.ui.canvas.view import GraphView
from xocview.ui.commands import perform
from xocview.ui.run_dialog import RunOptions


def _flat(tmp_path: Path) -> Path:
    """Scoped blocks without their scopes: taller than the window at 100%."""
    model = transformer_like(200)
    for i, node in enumerate(model.graph.node):
        node.name = f"n{i}"
    path = tmp_path / "flat.onnx"
    onnx.save(model, path)
    return path


def _open(qtbot, window, path: Path) -> GraphView:  # type: ignore[no-untyped-def]
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    return view


def _select_middle(view: GraphView) -> str:
    """Select a node box in the middle of the drawing and bring it to the screen's centre."""
    d = view.doc.drawing
    nodes = [k for k in range(d.count) if d.item_node[k] >= 0]
    k = sorted(nodes, key=lambda k: d.y[k])[len(nodes) // 2]
    view.doc.select_node(int(d.item_node[k]))
    view.centerOn(QPointF(d.x[k], d.y[k]))
    key = view.doc.selected_key()
    assert key is not None
    return key


def _on_screen(view: GraphView, key: str) -> QPointF:
    d = view.doc.drawing
    k = d.keys.index(key)
    return QPointF(view.mapFromScene(QPointF(d.x[k], d.y[k])))


def _same_place(view: GraphView, key: str, before: QPointF) -> None:
    assert view.doc.selected_key() == key
    after = _on_screen(view, key)
    assert abs(after.x() - before.x()) <= 4 and abs(after.y() - before.y()) <= 4  # whole pixels


def test_a_run_and_its_undo_keep_the_selection_where_it_was(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = _open(qtbot, window, _flat(tmp_path))
    assert view.scale_factor == pytest.approx(1.0)  # too tall to fit: the view scrolls
    key = _select_middle(view)
    before = _on_screen(view, key)
    runner = window.runner
    runner.ask = lambda parent, doc: RunOptions(repeat=1, warmup=0)
    assert runner.start() is not None
    qtbot.waitUntil(lambda: runner.job is None, timeout=60000)
    assert view.doc.undo_stack.count() == 1  # the run's times: one undo step
    _same_place(view, key, before)
    view.doc.undo_stack.undo()
    _same_place(view, key, before)
    view.doc.undo_stack.redo()
    _same_place(view, key, before)


def test_an_edit_above_keeps_the_selection_where_it_was(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = _open(qtbot, window, _flat(tmp_path))
    key = _select_middle(view)
    before = _on_screen(view, key)
    doc = view.doc
    first = next(nd for nd in doc.graph.nodes if nd.op_type == "MatMul")
    assert perform(doc, edits.delete_node, first.id) is None  # boxes above it move
    _same_place(view, key, before)
    doc.undo_stack.undo()
    _same_place(view, key, before)


def test_a_reload_keeps_the_tab_the_selection_and_the_place(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = _open(qtbot, window, _flat(tmp_path))
    key = _select_middle(view)
    view.zoom_to(0.8)
    view.centerOn(QPointF(view.doc.drawing.x[view.doc.selected_item()], 300.0))
    before = _on_screen(view, key)
    window.reload()
    qtbot.waitUntil(
        lambda: window.tabs.count() == 1 and window.tabs.currentWidget() is not view,
        timeout=20000,
    )
    again = window.tabs.currentWidget()
    assert isinstance(again, GraphView)
    qtbot.waitUntil(lambda: not again.doc.busy, timeout=20000)
    assert again.scale_factor == pytest.approx(0.8)
    _same_place(again, key, before)


def test_an_edit_keeps_a_selected_node_that_a_closed_group_hides(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """The inspector can show a node whose group is closed (a search hit): an edit of it
    keeps it selected, although it has no box to be found by."""
    from tests.conftest import REPO

    view = _open(qtbot, window, REPO / "sample_graphs" / "tiny_transformer.json")
    doc = view.doc
    node = doc.graph.index.node_position("l0.softmax")
    doc.select_node(node)
    assert doc.selected_item() < 0  # inside a closed Attention box
    assert perform(doc, edits.set_attribute, "l0.softmax", "axis", 1) is None
    assert doc.selected_key() == "l0.softmax"
    doc.undo_stack.undo()
    assert doc.selected_key() == "l0.softmax"


def test_a_collapse_and_an_expand_keep_the_group_where_it_was(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """The toggled group's top stays at its height on screen: as a frame before a collapse,
    as a box after it, and back. (Across, a drawing narrower than the window is centred by
    Qt, whatever the view asks.)"""
    from tests.conftest import REPO

    view = _open(qtbot, window, REPO / "sample_graphs" / "tiny_transformer.json")
    doc = view.doc
    view.zoom_to(1.0)
    group = doc.graph.index.node_position("layer1")
    assert "layer1" in doc.expanded

    def top_on_screen() -> QPointF:
        at = view.places.anchor(doc.drawing, "layer1")
        assert at is not None
        return QPointF(view.mapFromScene(at))

    view.centerOn(view.places.anchor(doc.drawing, "layer1"))
    before = top_on_screen()
    view.toggle_group(group)
    assert "layer1" not in doc.expanded
    assert abs(top_on_screen().y() - before.y()) <= 2
    view.toggle_group(group)
    assert "layer1" in doc.expanded
    assert abs(top_on_screen().y() - before.y()) <= 2
