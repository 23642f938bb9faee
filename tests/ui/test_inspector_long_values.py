"""Issue 30: the inspector never cuts a value without the whole of it within reach: a long
tensor name, shape or note that does not fit its column is whole in the cell's tooltip, which
wraps (a tooltip of one 200-character line ran off the screen)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from xocview.formats import save
from xocview.model import Graph, Node, Tensor
from xocview.ui.panels.inspector import cell_text
from xocview.ui.panels.inspector.cells import tip

LONG = "encoder/layers.11/self_attention/" + "q" * 140 + "/MatMul_output_0_" + "z" * 10
assert len(LONG) == 200


def long_names(path: Path) -> Path:
    tensors = [
        Tensor("x", "input", [1, 4], "float32"),
        Tensor(LONG, "activation", [1, 4], "float32"),
        Tensor("y", "output", [1, 4], "float32"),
    ]
    nodes = [
        Node("first", "Relu", [0], [1]),
        Node("second", "Relu", [1], [2], None, {"note": "a " * 120 + "long note"}),
    ]
    save(Graph("g", "g", tensors, nodes, [0], [2]), path)
    return path


def plain(tooltip: str) -> str:
    """What a tooltip shows, as text (rich text rendered, break opportunities dropped)."""
    doc = QTextDocument()
    doc.setHtml(tooltip) if tooltip.startswith("<") else doc.setPlainText(tooltip)
    return doc.toPlainText().replace("\u200b", "")


def items(tree: QTreeWidget) -> list[QTreeWidgetItem]:
    out: list[QTreeWidgetItem] = []
    todo = [tree.topLevelItem(k) for k in range(tree.topLevelItemCount())]
    while todo:
        item = todo.pop()
        if item is not None:
            out.append(item)
            todo += [item.child(k) for k in range(item.childCount())]
    return out


def _depth(item: QTreeWidgetItem) -> int:
    depth, at = 0, item.parent()
    while at is not None:
        depth, at = depth + 1, at.parent()
    return depth


def cut_cells_are_whole_in_their_tooltips(tree: QTreeWidget) -> int:
    """Every cell whose text is wider than its column has the whole text in its tooltip;
    returns how many cells were too wide."""
    metrics = QFontMetrics(tree.font())
    cut = 0
    for item in items(tree):
        for column in (0, 1):
            full = cell_text(item, column)
            indent = tree.indentation() * (_depth(item) + 1) if column == 0 else 0
            if metrics.horizontalAdvance(full) + indent + 8 <= tree.columnWidth(column):
                continue
            cut += 1
            assert full in plain(item.toolTip(column)), (column, full)
    return cut


def test_a_200_character_tensor_name_is_whole_in_its_tooltip(qtbot, window, tmp_path) -> None:  # type: ignore[no-untyped-def]
    window.open_path(long_names(tmp_path / "g.json"))
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    doc = window.tabs.currentWidget().doc
    tree = window.inspector.tree

    doc.select_node(doc.graph.index.node_position("first"))
    outputs = tree.findItems("Outputs", Qt.MatchFlag.MatchExactly)[0]
    row = outputs.child(0)
    shown = QFontMetrics(tree.font()).horizontalAdvance(row.text(0))
    assert shown > tree.columnWidth(0)  # the column cuts it ...
    assert plain(row.toolTip(0)) == LONG  # ... and its tooltip has all of it
    assert cut_cells_are_whole_in_their_tooltips(tree) >= 1

    doc.select_node(doc.graph.index.node_position("second"))
    assert cut_cells_are_whole_in_their_tooltips(tree) >= 2  # the input's name, the note

    doc.select_tensor(doc.graph.index.tensor_position(LONG))
    assert plain(tree.topLevelItem(0).toolTip(1)) == LONG
    assert cut_cells_are_whole_in_their_tooltips(tree) >= 1


def test_long_tooltips_wrap_and_short_ones_stay_plain(qtbot) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtWidgets import QLabel

    assert tip("1x64x112x112 float32") == "1x64x112x112 float32"
    rich = tip(LONG)
    label = QLabel(rich)  # as QToolTip shows it: rich text word-wrapped
    label.setWordWrap(True)
    assert label.sizeHint().width() < QFontMetrics(label.font()).horizontalAdvance(LONG) / 2
    assert plain(rich) == LONG
    assert plain(tip("a < b & c\n" + "d" * 100)) == "a < b & c\n" + "d" * 100
