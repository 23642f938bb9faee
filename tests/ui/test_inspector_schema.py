"""The inspector as a reader of operators: input and output roles from the ONNX schema, the
operator's documentation, and long names elided in the middle."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem

from tests.conftest import REPO
from xocview.ui.canvas.view import GraphView

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def open_file(qtbot, window, path: Path) -> GraphView:  # type: ignore[no-untyped-def]
    if not path.exists():
        pytest.skip(f"{path} is absent")
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    return window.tabs.currentWidget()


def children(window, name: str) -> list[QTreeWidgetItem]:  # type: ignore[no-untyped-def]
    root = window.inspector.tree.findItems(name, Qt.MatchFlag.MatchExactly)[0]
    return [root.child(k) for k in range(root.childCount())]


def test_conv_inputs_show_their_roles_and_the_operator_its_documentation(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, LIGHT / "light_resnet50.onnx")
    g = view.doc.graph
    conv = next(i for i, n in enumerate(g.nodes) if n.op_type == "Conv")
    view.doc.select_node(conv)
    ins = children(window, "Inputs")
    assert [row.text(2) for row in ins] == ["X", "W"]
    assert [row.text(0) for row in ins] == [g.tensors[t].id for t in g.nodes[conv].inputs]
    assert [row.text(2) for row in children(window, "Outputs")] == ["Y"]
    rows = window.inspector.rows()
    assert rows["Schema"] == "ai.onnx, since opset 1"  # the version at the model's opset 9
    assert rows["Documentation"].startswith("The convolution operator consumes an input tensor")
    tip = window.inspector.tree.findItems("Documentation", Qt.MatchFlag.MatchExactly)[0].toolTip(1)
    assert "<b>Conv</b> (ai.onnx, since opset 1)" in tip


def test_variadic_inputs_are_numbered(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, LIGHT / "light_inception_v1.onnx")
    g = view.doc.graph
    concat = next(i for i, n in enumerate(g.nodes) if n.op_type == "Concat")
    view.doc.select_node(concat)
    n = len(g.nodes[concat].inputs)
    assert [row.text(2) for row in children(window, "Inputs")] == [f"inputs[{k}]" for k in range(n)]


def test_an_operator_onnx_does_not_define_has_no_roles_or_documentation(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, REPO / "sample_graphs" / "tiny_transformer.json")
    g = view.doc.graph
    group = g.index.node_position("l0.attention")  # a group: op type "Attention"
    view.doc.select_node(group)
    rows = window.inspector.rows()
    assert "Schema" not in rows and "Documentation" not in rows
    assert all(row.text(2) == "" for row in children(window, "Inputs"))
    softmax = g.index.node_position("l0.softmax")
    view.doc.select_node(softmax)
    assert window.inspector.rows()["Schema"].startswith("ai.onnx, since opset ")
    assert [row.text(2) for row in children(window, "Inputs")] == ["input"]


def test_names_are_elided_in_the_middle(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    """Two weights whose names differ only at the end stay apart in a narrow column."""
    view = open_file(qtbot, window, LIGHT / "light_resnet50.onnx")
    conv = next(i for i, n in enumerate(view.doc.graph.nodes) if n.op_type == "Conv")
    view.doc.select_node(conv)
    tree = window.inspector.tree
    assert tree.textElideMode() == Qt.TextElideMode.ElideMiddle
    metrics = tree.fontMetrics()
    names = ["conv_4a_double_3x3_0_w", "conv_4a_double_3x3_1_w"]  # seen as "conv_4a_dou..." twice
    width = metrics.horizontalAdvance(names[0]) * 2 // 3
    shown = [metrics.elidedText(n, tree.textElideMode(), width) for n in names]
    assert shown[0] != shown[1] and all("…" in t for t in shown)
    assert all(t.startswith("conv") and t.endswith("_w") for t in shown)
