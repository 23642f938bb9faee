"""Facts follow edits in the window: a Conv's strides set in the inspector changes the edge
labels, the inspector's shapes, FLOPs, the heat and the Problems' facts of everything below;
undo brings the old ones back."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidgetItem

from tests.model.edits.test_reinfer import conv_chain
from xocview.formats import load
from xocview.model import edits, validate
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.ui.commands import perform
from xocview.ui.document import ASYNC_FROM_ITEMS, Document


def row(window, *names: str) -> QTreeWidgetItem:  # type: ignore[no-untyped-def]
    """The inspector row at a path of property names."""
    item = window.inspector.tree.findItems(names[0], Qt.MatchFlag.MatchExactly)[0]
    for name in names[1:]:
        item = next(
            item.child(k) for k in range(item.childCount()) if item.child(k).text(0) == name
        )
    return item


def edge_text(doc: Document, tensor: str) -> str:
    """The label drawn on the edge that carries ``tensor``."""
    t = doc.graph.index.tensor_position(tensor)
    d = doc.drawing
    found = [d.edge_label[k] for k in np.flatnonzero(d.edge_tensor == t)]
    assert found, f"no edge carries {tensor}"
    return found[0]


def open_chain(qtbot, window, tmp_path: Path) -> Document:  # type: ignore[no-untyped-def]
    window.open_path(conv_chain(tmp_path / "chain.onnx"))
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    doc = window.tabs.currentWidget().doc
    doc.set_show_weights(True)  # the weights as nodes: every activation has an edge
    return doc


def test_strides_set_in_the_inspector_reach_edges_inspector_flops_and_undo(  # type: ignore[no-untyped-def]
    qtbot, window, tmp_path: Path
) -> None:
    doc = open_chain(qtbot, window, tmp_path)
    g = doc.graph
    assert "16" in edge_text(doc, "r0") and "32" not in edge_text(doc, "r0")
    flops_before = doc.fact("flops_at_batch_1")
    doc.select_node(g.index.node_position("stem"))
    row(window, "Attributes", "strides").setText(1, "[1, 1]")
    assert g.node("stem").attributes["strides"] == [1, 1]
    assert g.tensor("r0").shape == [1, 8, 32, 32]
    assert "32" in edge_text(doc, "r0") and "16" not in edge_text(doc, "r0")
    assert "16" in edge_text(doc, "p")  # below the pooling: 16 now, 8 before
    flops_after = doc.fact("flops_at_batch_1")
    assert flops_after != flops_before
    assert flops_after[0] > 3.5 * flops_before[0]  # type: ignore[index]
    doc.select_tensor(g.index.tensor_position("a1"))
    assert "32" in row(window, "Shape").text(1)
    window.undo_group.undo()
    assert g.tensor("r0").shape == [1, 8, 16, 16]
    assert "16" in edge_text(doc, "r0") and "32" not in edge_text(doc, "r0")
    assert doc.fact("flops_at_batch_1") == flops_before
    doc.select_tensor(g.index.tensor_position("a1"))
    assert "16" in row(window, "Shape").text(1) and "32" not in row(window, "Shape").text(1)
    window.undo_group.redo()
    assert g.tensor("r0").shape == [1, 8, 32, 32] and "32" in edge_text(doc, "r0")
    assert doc.fact("flops_at_batch_1") == flops_after


def test_heat_follows_an_edit_and_stale_times_are_not_shown(  # type: ignore[no-untyped-def]
    qtbot, window, tmp_path: Path
) -> None:
    doc = open_chain(qtbot, window, tmp_path)
    g = doc.graph
    for nid in ("conv1", "fc"):
        assert perform(doc, edits.set_metadata, "performance.time.cpu", 2.0, node=nid) is None
    conv1, fc = g.index.node_position("conv1"), g.index.node_position("fc")
    doc.set_colour_by("flops")
    flops_heat = doc.node_values()
    assert flops_heat is not None
    before = float(flops_heat[conv1])
    assert perform(doc, edits.set_attribute, "stem", "strides", [1, 1]) is None
    after = doc.node_values()
    assert after is not None and float(after[conv1]) == 4 * before  # 4x the pixels
    doc.set_colour_by("time")
    times = doc.times_ms()
    assert np.isnan(times[conv1])  # measured on the old shapes: not shown as if still true
    assert times[fc] == 2.0  # not reached: its input kept its shape
    window.undo_group.undo()
    assert doc.times_ms()[conv1] == 2.0
    doc.set_colour_by("flops")
    values = doc.node_values()
    assert values is not None and float(values[conv1]) == before


def long_chain(path: Path, blocks: int = 520) -> Path:
    """A stem Conv /2 and ``blocks`` Conv-Relu pairs on a tiny image: a graph big enough
    (over 1,000 nodes) that the document makes its facts in a thread."""
    rng = np.random.default_rng(2)
    nodes = [helper.make_node("Conv", ["x", "w"], ["s"], name="stem", strides=[2, 2], pads=[1] * 4)]
    inits = [numpy_helper.from_array(rng.standard_normal((2, 2, 3, 3)).astype(np.float32), "w")]
    x = "s"
    for i in range(blocks):
        nodes += [
            helper.make_node("Conv", [x, "w"], [f"c{i}"], name=f"conv{i}", pads=[1] * 4),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
        ]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "long",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(onnx.shape_inference.infer_shapes(model), str(path))
    return path


def test_a_big_graphs_facts_are_made_again_in_a_thread_after_an_edit_and_its_undo(  # type: ignore[no-untyped-def]
    qtbot, tmp_path: Path
) -> None:
    g = load(long_chain(tmp_path / "long.onnx"))
    assert len(g.nodes) >= ASYNC_FROM_ITEMS
    doc = Document(g)
    qtbot.waitUntil(lambda: doc.fact("flops_at_batch_1") is not None, timeout=20000)
    before = doc.fact("flops_at_batch_1")
    assert before == graph_flops_assuming(g, 1)
    with qtbot.waitSignal(doc.facts_changed, timeout=20000):
        assert perform(doc, edits.set_attribute, "stem", "strides", [1, 1]) is None
        assert doc.fact("flops_at_batch_1") is None  # being made: not the old one
        assert g.tensor("r519").shape == [1, 2, 8, 8]
    after = doc.fact("flops_at_batch_1")
    assert after == graph_flops_assuming(g, 1) and after != before
    assert doc.fact("validate") == validate(g)
    with qtbot.waitSignal(doc.facts_changed, timeout=20000):
        doc.undo_stack.undo()
    assert doc.fact("flops_at_batch_1") == before
    assert g.tensor("r519").shape == [1, 2, 4, 4]
