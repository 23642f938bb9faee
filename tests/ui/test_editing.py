"""Editing in the viewer: inspector cells, the canvas, undo, save and reopen."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QTreeWidgetItem

from tests.conftest import REPO
from xocview.formats import load
from xocview.model import edits
from xocview.ui.canvas.view import GraphView
from xocview.ui.commands import perform

SAMPLES = REPO / "sample_graphs"


def open_copy(qtbot, window, tmp_path: Path, name: str = "tiny_transformer.json") -> GraphView:  # type: ignore[no-untyped-def]
    path = tmp_path / name
    shutil.copy(SAMPLES / name, path)
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    return window.tabs.currentWidget()


def row(window, *names: str) -> QTreeWidgetItem:  # type: ignore[no-untyped-def]
    """The inspector row at a path of property names."""
    tree = window.inspector.tree
    item = tree.findItems(names[0], Qt.MatchFlag.MatchExactly)[0]
    for name in names[1:]:
        item = next(
            item.child(k) for k in range(item.childCount()) if item.child(k).text(0) == name
        )
    return item


def test_editing_an_attribute_cell_applies_and_undoes(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    node = g.index.node_position("l0.softmax")
    view.doc.select_node(node)
    row(window, "Attributes", "axis").setText(1, "1")
    assert g.nodes[node].attributes["axis"] == 1
    assert view.doc.dirty
    window.undo_group.undo()
    assert g.nodes[node].attributes["axis"] == -1


def test_a_bad_value_is_refused_in_place(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    before = copy.deepcopy(g)
    view.doc.select_node(g.index.node_position("l0.softmax"))
    row(window, "Attributes", "axis").setText(1, '"wide"')
    assert window.inspector.message.isVisibleTo(window.inspector)
    assert "axis" in window.inspector.message.text()
    assert g == before and not view.doc.dirty
    assert row(window, "Attributes", "axis").text(1) == "-1"


def test_rename_shape_and_metadata_cells(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    view.doc.select_node(g.index.node_position("head"))
    row(window, "Node").setText(1, "classifier")
    assert g.nodes[view.doc.selected_node].id == "classifier"
    view.doc.select_tensor(g.index.tensor_position("logits"))
    row(window, "Shape").setText(1, "2x16x1000")
    assert g.tensor("logits").shape == [2, 16, 1000]
    view.doc.select_node(g.index.node_position("l0.q"))
    row(window, "Metadata", "performance", "time", "cpu").setText(1, "0.5")
    assert g.node("l0.q").metadata["performance"]["time"]["cpu"] == 0.5
    out = tmp_path / "edited.json"
    window.ask_path = lambda parent, doc: out
    assert window.save(save_as=True)
    again = load(out)
    assert again.node("classifier").op_type == "MatMul"
    assert again.tensor("logits").shape == [2, 16, 1000]
    assert again.node("l0.q").metadata["performance"]["time"]["cpu"] == 0.5


def test_delete_key_removes_the_node_and_undo_brings_it_back(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "all_dtypes.json")
    g = view.doc.graph
    before = copy.deepcopy(g)
    view.doc.select_node(g.index.node_position("to_double"))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert not any(n.id == "to_double" for n in g.nodes)
    assert view.doc.drawing.count < 1000 and window.undo_group.canUndo()
    window.undo_group.undo()
    assert g == before


def test_a_hundred_edits_undo_to_the_original(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    before = copy.deepcopy(g)
    for k in range(100):
        node = g.nodes[k % len(g.nodes)]
        assert perform(view.doc, edits.set_metadata, f"note.k{k}", k, node=node.id) is None
    for _ in range(100):
        window.undo_group.undo()
    assert g == before
    assert not view.doc.dirty


def test_refusals_from_the_canvas_are_reported(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    assert not view.edit(edits.bypass_node, "l0.scores")  # two data inputs
    assert "l0.scores" in window.errors[-1]


def test_inspector_menu_edits_structure(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    insp = window.inspector

    def run(item: QTreeWidgetItem | None, prefix: str) -> None:
        action = next(a for text, a in insp.structural_actions(item) if text.startswith(prefix))
        action()

    view.doc.select_node(g.index.node_position("l0.softmax"))
    run(row(window, "Attributes", "axis"), "Remove Attribute 'axis'")
    assert "axis" not in g.node("l0.softmax").attributes
    view.doc.select_node(g.index.node_position("l0.q"))
    run(
        row(window, "Metadata", "performance", "time", "cpu"),
        "Delete Metadata 'performance.time.cpu'",
    )
    assert "performance" not in g.node("l0.q").metadata
    view.doc.select_tensor(g.index.tensor_position("l0.p"))
    run(None, "Mark as Graph Output")
    assert g.index.tensor_position("l0.p") in g.outputs and g.tensor("l0.p").kind == "output"
    for _ in range(3):
        window.undo_group.undo()
    assert g.node("l0.softmax").attributes["axis"] == -1
    assert g.node("l0.q").metadata["performance"]["time"]["cpu"] == 0.05
    assert g.tensor("l0.p").kind == "activation"


def test_ctrl_click_selects_several_nodes_to_group(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_copy(qtbot, window, tmp_path, "all_dtypes.json")
    g = view.doc.graph
    view.zoom_to(1.0)
    d = view.doc.drawing
    picks = [
        int(np.flatnonzero(d.item_node == g.index.node_position(n))[0])
        for n in ("to_half", "to_int32")
    ]
    for k, mods in zip(
        picks, (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.ControlModifier), strict=True
    ):
        view.centerOn(QPointF(d.x[k], d.y[k]))
        qtbot.mouseClick(
            view.viewport(),
            Qt.MouseButton.LeftButton,
            mods,
            view.mapFromScene(QPointF(d.x[k], d.y[k])),
        )
    assert view.doc.selected_node_ids() == ["to_half", "to_int32"]
    assert view.edit(edits.group_nodes, view.doc.selected_node_ids())
    group = g.nodes[-1]
    assert group.metadata["children_ids"] == ["to_half", "to_int32"]
    assert g.node("to_half").metadata["parent_id"] == group.id


def test_a_double_click_edits_a_value_and_the_keyboard_stays_in_the_inspector(  # type: ignore[no-untyped-def]
    qtbot, window, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QLineEdit

    view = open_copy(qtbot, window, tmp_path)
    g = view.doc.graph
    node = g.index.node_position("l0.softmax")
    view.doc.select_node(node)
    window.search_dock.show()  # the widget the focus used to fall to
    tree = window.inspector.tree
    cell = row(window, "Attributes", "axis")
    tree.scrollToItem(cell)
    spot = tree.visualItemRect(cell).center()
    spot.setX(tree.header().sectionPosition(1) + 10)
    # a real double-click: press and release, then the second press arrives as a double-click
    qtbot.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=spot)
    qtbot.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, pos=spot)
    editor = tree.viewport().findChild(QLineEdit) or tree.findChild(QLineEdit)
    assert editor is not None and editor.isVisible()  # one double-click opened the editor
    editor.setText("1")
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: g.nodes[node].attributes["axis"] == 1, timeout=5000)
    qtbot.waitUntil(tree.hasFocus, timeout=5000)
    current = tree.currentItem()
    assert current is not None and (current.text(0), current.parent().text(0)) == (
        "axis",
        "Attributes",
    )
