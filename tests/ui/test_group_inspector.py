"""Issue 30: a collapsed group says what it holds. Its inspector lists the tensors crossing its
border (before: ``Inputs 0 / Outputs 0``) with shapes and dtypes, its operators, parameters
and FLOPs; its box names its op mix (before: ``6 inside``)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem

from tests.model.test_group_facts import attention_graph
from xocview.formats import save
from xocview.ui.canvas.drawing import KIND_GROUP


def children(tree, name: str) -> list[QTreeWidgetItem]:  # type: ignore[no-untyped-def]
    row = tree.findItems(name, Qt.MatchFlag.MatchExactly)[0]
    return [row.child(k) for k in range(row.childCount())]


def test_a_collapsed_group_lists_its_border_ops_parameters_and_flops(
    qtbot, window, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "g.json"
    save(attention_graph(), path)
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    doc = window.tabs.currentWidget().doc
    doc.set_level(0)  # everything collapsed: block is one box
    g, d = doc.graph, doc.drawing
    block = g.index.node_position("block")
    k = int((d.item_node == block).nonzero()[0][0])
    assert d.kind[k] == KIND_GROUP
    assert d.detail[k] == "Attention: 4 ops"

    doc.select_node(block)
    tree = window.inspector.tree
    rows = window.inspector.rows()
    assert rows["Inputs"] == "1" and rows["Outputs"] == "1"
    (x,) = children(tree, "Inputs")
    assert (x.text(0), x.text(1)) == ("x", "input  2x4  float32")
    (r,) = children(tree, "Outputs")
    assert (r.text(0), r.text(1)) == ("r", "activation  2x4  float32")
    ops = {row.text(0): row.text(1) for row in children(tree, "Operators")}
    assert ops == {"MatMul": "2", "Softmax": "1", "Relu": "1"}
    assert rows["Operators"] == "4 (3 types)"
    assert rows["Parameters"] == "32"  # w1 and w2, 4x4 each
    assert rows["FLOPs"] == f"{2 * (2 * 2 * 4 * 4) + _softmax_relu(g):,}"

    doc.select_node(g.index.node_position("attn"))  # a group inside: its own border
    assert [row.text(0) for row in children(tree, "Outputs")] == ["m"]


def _softmax_relu(g) -> int:  # type: ignore[no-untyped-def]
    """What ops.json counts for the Softmax and the Relu (whatever its rule, the group's FLOPs
    are its leaves' sum)."""
    from xocview.model.analyses import opfacts

    return sum(
        opfacts.flops(g, g.index.node_position(n), unknown_dims=1) or 0 for n in ("sm", "relu")
    )
