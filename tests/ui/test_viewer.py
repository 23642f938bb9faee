"""The viewer as a user drives it: open, click, read the pane, collapse, expand, walk, export."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage

from tests.conftest import REPO, SHARED
from xocview.ui.canvas.drawing import KIND_GROUP
from xocview.ui.canvas.view import GraphView

SAMPLES = REPO / "sample_graphs"


def open_file(qtbot, window, path: Path) -> GraphView:  # type: ignore[no-untyped-def]
    before = window.tabs.count()
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == before + 1, timeout=20000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    return view


def click_item(qtbot, view: GraphView, k: int, double: bool = False) -> None:  # type: ignore[no-untyped-def]
    d = view.doc.drawing
    view.centerOn(QPointF(d.x[k], d.y[k]))
    pos = view.mapFromScene(QPointF(d.x[k], d.y[k]))
    if double:
        qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    else:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=pos)


def _places(view: GraphView) -> dict[str, tuple[float, float]]:
    """(x, y) of every box by node or tensor id."""
    d, g = view.doc.drawing, view.doc.graph
    out = {}
    for k in range(d.count):
        i, t = int(d.item_node[k]), int(d.item_tensor[k])
        key = g.nodes[i].id if i >= 0 else g.tensors[t].id
        out[key] = (float(d.x[k]), round(float(d.y[k]), 3))
    return out


def item_of(view: GraphView, node_id: str) -> int:
    pos = view.doc.graph.index.node_position(node_id)
    hits = np.flatnonzero(view.doc.drawing.item_node == pos)
    assert len(hits), f"{node_id} has no box"
    return int(hits[0])


@pytest.mark.parametrize("name", ["simple_model.json", "tiny_transformer.json", "all_dtypes.json"])
def test_every_sample_opens_in_a_tab(qtbot, window, name: str) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / name)
    assert window.tabs.tabText(window.tabs.currentIndex()) == name
    assert view.doc.drawing.count > 0


def test_clicking_a_node_shows_it_in_the_inspector(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "all_dtypes.json")
    view.zoom_to(1.0)
    click_item(qtbot, view, item_of(view, "to_half"))
    rows = window.inspector.rows()
    assert rows["Node"] == "to_half" and rows["Op type"] == "Cast"
    tree = window.inspector.tree
    outputs = tree.findItems("Outputs", Qt.MatchFlag.MatchExactly)[0]
    assert outputs.child(0).text(0) == "x_f16"
    assert outputs.child(0).text(1) == "output  1x3x8x8  float16"


def test_clicking_a_tensor_shows_shape_dtype_and_size(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "all_dtypes.json")
    d = view.doc.drawing
    k = int(np.flatnonzero(d.item_tensor == view.doc.graph.index.tensor_position("image"))[0])
    view.zoom_to(1.0)
    click_item(qtbot, view, k)
    rows = window.inspector.rows()
    assert rows["Tensor"] == "image" and rows["Shape"] == "1x3x8x8"
    assert rows["Dtype"] == "uint8" and rows["Size"].startswith("192 bytes")


def test_collapse_and_expand_keep_the_others_in_order(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.menus.weights.trigger()  # weights as nodes: more boxes whose order must hold
    assert window.menus.weights.isChecked()
    view = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    doc = view.doc
    assert "layer0" in doc.expanded  # small graphs open fully expanded
    before = doc.drawing.count
    old = _places(view)
    group = doc.graph.index.node_position("layer0")
    view.toggle_group(group)  # collapse
    assert "layer0" not in doc.expanded
    assert doc.drawing.count < before
    k = item_of(view, "layer0")
    assert doc.drawing.kind[k] == KIND_GROUP
    new = _places(view)
    # every two untouched boxes that share a layer before and after keep their left-right order
    kept = [key for key in old if key in new]
    pairs = 0
    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            if old[a][1] == old[b][1] and new[a][1] == new[b][1]:
                pairs += 1
                assert (old[a][0] < old[b][0]) == (new[a][0] < new[b][0]), (a, b)
    assert pairs > 10
    view.zoom_to(1.0)
    click_item(qtbot, view, k, double=True)  # double-click expands it again
    assert "layer0" in doc.expanded
    assert doc.drawing.count == before


def test_arrow_keys_walk_the_graph(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "all_dtypes.json")
    g = view.doc.graph
    view.doc.select_node(g.index.node_position("to_half"))
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert g.nodes[view.doc.selected_node].id == "to_int32" or view.doc.selected_tensor >= 0
    view.doc.select_node(g.index.node_position("to_half"))
    qtbot.keyClick(view, Qt.Key.Key_Up)
    assert g.nodes[view.doc.selected_node].id == "to_float"


def test_a_broken_file_shows_a_message_and_others_still_open(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.open_path(SAMPLES / "broken" / "truncated.json")
    view = open_file(qtbot, window, SAMPLES / "simple_model.json")
    qtbot.waitUntil(lambda: bool(window.errors), timeout=20000)
    assert "invalid JSON" in window.errors[0]
    assert "truncated.json" in window.errors[0]
    assert view.doc.graph.name == "simple_model"


def test_export_png_and_svg(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    png, svg = tmp_path / "g.png", tmp_path / "g.svg"
    window.export(png)
    window.export(svg)
    image = QImage(str(png))
    d = view.doc.drawing
    assert image.width() == round(d.width + 48) and image.height() == round(d.height + 48)
    text = svg.read_text(encoding="utf-8")
    assert text.lstrip().startswith("<?xml") and "<svg" in text and "MatMul" in text


def test_one_corpus_file_per_format_opens(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    import onnx

    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    files = [
        light / "light_squeezenet.onnx",
        SHARED / "corpus" / "nnvm" / "mxnet14_mtcnn_det1-symbol.json",
        SHARED / "corpus" / "lightnet" / "lightnet_test_ops.json",
        SHARED / "corpus" / "xoc" / "xoc_resnet18.json",
    ]
    present = [f for f in files if f.exists()]
    if len(present) < len(files):
        pytest.skip("../shared/corpus is absent")
    for f in present:
        view = open_file(qtbot, window, f)
        assert view.doc.drawing.count > 0


def test_wheel_zoom_and_fit(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    view.fit()
    fitted = view.scale_factor
    view.zoom_by(2.0)
    assert view.scale_factor == pytest.approx(fitted * 2.0)
    qtbot.keyClick(view, Qt.Key.Key_0)
    assert view.scale_factor == pytest.approx(fitted)
    assert view.mapFromScene(QPointF(0, 0)) != QPoint(-1, -1)


def test_attributes_show_their_types_and_arrows_pan_without_a_selection(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, SAMPLES / "tiny_transformer.json")
    g = view.doc.graph
    view.doc.select_node(g.index.node_position("l0.kt"))
    attrs = window.inspector.tree.findItems("Attributes", Qt.MatchFlag.MatchExactly)[0]
    perm = attrs.child(0)
    assert (perm.text(0), perm.text(1), perm.text(2)) == ("perm", "[0, 2, 1]", "ints")
    view.doc.clear_selection()
    view.zoom_to(1.0)
    bar = view.verticalScrollBar()
    bar.setValue(bar.minimum())
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert bar.value() > bar.minimum()


def test_theme_choice_persists_and_follows_the_system(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    window.set_theme("dark")
    assert window.theme_name == "dark" and window.settings.value("theme") == "dark"
    window.set_theme("system")
    assert window.theme_name in ("light", "dark")
    assert window.settings.value("theme") == "system"


def test_big_graphs_relayout_in_the_background(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    from xocview.model import Graph, Node, Tensor
    from xocview.ui.document import ASYNC_FROM_ITEMS

    n = ASYNC_FROM_ITEMS + 200
    tensors = [Tensor(f"t{i}", "activation", [1], "float32") for i in range(n + 1)]
    tensors[0].kind = "input"
    nodes = [Node(f"n{i}", "Relu", [i], [i + 1]) for i in range(n)]
    graph = Graph("chain", "chain", tensors, nodes, [0], [n])
    view = window.add_document(graph, None)
    doc = view.doc
    d = doc.drawing  # the chain runs down (in columns: it is long)
    assert d.y[1] > d.y[0] and d.x[1] == pytest.approx(d.x[0])
    doc.set_direction("LR")
    assert doc.busy  # the window keeps running while the worker lays out
    qtbot.waitUntil(lambda: not doc.busy, timeout=30000)
    d = doc.drawing  # ... and now across
    assert d.x[1] > d.x[0] and d.y[1] == pytest.approx(d.y[0])
