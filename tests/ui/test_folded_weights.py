"""Weights folded into their consumers by default (rows ``W 64x3x7x7`` in the box), and View >
Weights as Nodes bringing back a box per weight."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtCore import QRectF
from PySide6.QtGui import QImage, QPainter

from tests.conftest import REPO
from xocview.formats.registry import load_source
from xocview.formats.source import Source
from xocview.model import Graph, Hierarchy
from xocview.ui.canvas.drawing import CONSTANT_OPS, KIND_TENSOR, ROW_H, Drawing, build_drawing
from xocview.ui.canvas.painter import LOD_DETAIL, paint_drawing
from xocview.ui.canvas.style import theme
from xocview.ui.canvas.view import GraphView

SAMPLES = REPO / "sample_graphs"
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _load(path: Path) -> tuple[Graph, set[str]]:
    """The graph with every group open, so that every weight's reader is a box."""
    graph, _fmt = load_source(Source(path))
    h = Hierarchy(graph)
    return graph, {graph.nodes[g].id for g in range(len(graph.nodes)) if h.is_group[g]}


def _weight_items(graph: Graph, d: Drawing) -> list[int]:
    return [
        k
        for k in range(d.count)
        if d.kind[k] == KIND_TENSOR and graph.tensors[int(d.item_tensor[k])].kind == "weight"
    ]


def _edges_from_weights(graph: Graph, d: Drawing) -> int:
    return sum(graph.tensors[int(t)].kind == "weight" for t in d.edge_tensor.tolist())


@pytest.mark.parametrize("path", [SAMPLES / "tiny_transformer.json", LIGHT / "light_resnet50.onnx"])
def test_default_drawing_folds_weights_and_the_option_brings_them_back(path: Path) -> None:
    graph, expanded = _load(path)
    folded = build_drawing(graph, expanded)
    nodes = build_drawing(graph, expanded, show_weights=True)
    assert not folded.weights_as_nodes and nodes.weights_as_nodes
    assert _weight_items(graph, folded) == [] and _edges_from_weights(graph, folded) == 0
    weights = _weight_items(graph, nodes)
    assert weights and _edges_from_weights(graph, nodes) > 0
    assert folded.count <= nodes.count - len(weights)
    assert all(r == () for r in nodes.rows)
    # every weight a leaf box reads is one row of it, and the box has room for its rows
    rows = 0
    for k in range(folded.count):
        i = int(folded.item_node[k])
        if i < 0 or graph.nodes[i].op_type in ("Scope",):
            continue
        reads = [t for t in graph.nodes[i].inputs if graph.tensors[t].kind == "weight"]
        if folded.kind[k] != KIND_TENSOR and folded.rows[k]:
            assert len(folded.rows[k]) >= len(reads)  # and the constants made for it
            assert folded.h[k] >= len(reads) * ROW_H + 34
            rows += len(reads)
    read = {t for nd in graph.nodes for t in nd.inputs}
    drawn = {int(nodes.item_tensor[k]) for k in weights}
    assert rows > 0
    # a weight nothing reads is drawn only as a node; every other is a row of each box reading
    # it, or was read by a constant-making node that is folded as well
    boxed = {int(i) for i in folded.item_node.tolist() if i >= 0}
    for t in drawn & read:
        readers = [i for i, nd in enumerate(graph.nodes) if t in nd.inputs]
        assert all(i in boxed or graph.nodes[i].op_type in CONSTANT_OPS for i in readers)


@pytest.mark.parametrize("name", ["resnet50", "squeezenet"])
def test_each_conv_of_a_cnn_lists_w_and_b(name: str) -> None:
    graph, expanded = _load(LIGHT / f"light_{name}.onnx")
    d = build_drawing(graph, expanded)
    convs = [
        k
        for k in range(d.count)
        if d.item_node[k] >= 0 and graph.nodes[int(d.item_node[k])].op_type == "Conv"
    ]
    assert len(convs) > 20
    for k in convs:
        node = graph.nodes[int(d.item_node[k])]
        w = graph.tensors[node.inputs[1]]
        expected = [f"W {'x'.join(map(str, w.shape))}"]
        if len(node.inputs) > 2:
            expected.append(f"B {w.shape[0]}")
        assert list(d.rows[k]) == expected
    if name == "squeezenet":  # its convolutions have biases
        assert all(len(d.rows[k]) == 2 for k in convs)


def test_rows_name_the_input_position_when_the_operator_has_no_schema() -> None:
    graph, expanded = _load(SAMPLES / "tiny_transformer.json")
    d = build_drawing(graph, expanded)
    texts = [row for rows in d.rows for row in rows]
    assert texts
    for row in texts:
        role, _, shape = row.partition(" ")
        assert role and shape, row


def test_the_painter_draws_rows_at_the_detail_level(qtbot) -> None:  # type: ignore[no-untyped-def]
    graph, expanded = _load(LIGHT / "light_resnet50.onnx")
    d = build_drawing(graph, expanded)
    k = next(i for i in range(d.count) if len(d.rows[i]) == 2)
    rect = QRectF(d.x[k] - d.w[k] / 2, d.y[k] - d.h[k] / 2, d.w[k], d.h[k])
    rows_band = QRectF(rect.left(), rect.bottom() - 2 * ROW_H, rect.width(), 2 * ROW_H)

    def ink(scale: float) -> int:
        image = QImage(int(rect.width()) + 2, int(rect.height()) + 2, QImage.Format.Format_RGB32)
        image.fill(0xFFFFFF)
        painter = QPainter(image)
        painter.translate(-rect.left() + 1, -rect.top() + 1)
        paint_drawing(painter, d, theme("light"), rect, scale)
        painter.end()
        band = image.copy(
            int(rows_band.left() - rect.left()) + 4,
            int(rows_band.top() - rect.top()) + 2,
            int(rows_band.width()) - 8,
            int(rows_band.height()) - 2,
        )
        pixels = np.frombuffer(band.constBits(), dtype=np.uint8).reshape(-1, 4)[:, :3]
        return int((pixels.sum(axis=1) < 300).sum())  # dark text pixels on the light fill

    assert ink(LOD_DETAIL) > 20
    assert ink(LOD_DETAIL * 0.9) == 0


def test_weights_as_nodes_is_off_by_default_and_brings_the_old_drawing_back(  # type: ignore[no-untyped-def]
    qtbot, window
) -> None:
    action = window.menus.weights
    assert action.text().replace("&", "") == "Weights as Nodes" and not action.isChecked()
    window.open_path(SAMPLES / "tiny_transformer.json")
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    doc = view.doc
    graph = doc.graph
    assert not doc.show_weights and _weight_items(graph, doc.drawing) == []
    folded = doc.drawing.count
    action.trigger()
    qtbot.waitUntil(lambda: bool(_weight_items(graph, doc.drawing)), timeout=20000)
    assert doc.drawing.count > folded and doc.drawing.weights_as_nodes
    action.trigger()
    qtbot.waitUntil(lambda: not _weight_items(graph, doc.drawing), timeout=20000)
    assert doc.drawing.count == folded
