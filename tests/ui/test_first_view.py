"""The first view of a graph: which groups open, the zoom and place it opens at, the minimap."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage

from tests.conftest import REPO
from tests.perf.onnx_models import transformer_like
from xocview.formats import load
from xocview.model import Graph, Hierarchy, visible_graph
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.canvas.view import LEGIBLE_SCALE, GraphView
from xocview.ui.document import initial_expanded
from xocview.ui.first_view import FIT, MIN_BOXES, boxes_of, first_view_state, fits
from xocview.ui.headless import render_file

SAMPLES = REPO / "sample_graphs"


def torch_like(tmp_path: Path, num_nodes: int = 400) -> Path:
    """Blocks named by scope, as torch exports them: the ONNX reader makes scope groups."""
    path = tmp_path / "torch_like.onnx"
    onnx.save(transformer_like(num_nodes), path)
    return path


def flat_long(tmp_path: Path, num_nodes: int = 300) -> Path:
    """The same blocks without scopes: a flat graph too tall to read at fit."""
    model = transformer_like(num_nodes)
    for i, node in enumerate(model.graph.node):
        node.name = f"n{i}"
    path = tmp_path / "flat_long.onnx"
    onnx.save(model, path)
    return path


def boxes(graph: Graph, expanded: set[str]) -> int:
    return len(visible_graph(graph, expanded, tensor_kinds=()).node_items)


def drawn(graph: Graph, expanded: set[str]) -> Drawing:
    return build_drawing(graph, expanded)


def test_a_torch_export_opens_at_the_deepest_level_that_fits(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """40 scoped blocks: the first view fits the window at a readable zoom, shows more than a
    handful of boxes, opens repeated blocks alike, and no further opening would still fit."""
    graph = load(torch_like(tmp_path))
    h = Hierarchy(graph)
    expanded, drawing = first_view_state(graph, h)
    assert drawing is not None and fits(drawing) and boxes_of(drawing) >= MIN_BOXES
    names = {graph.nodes[g].id: g for g in np.flatnonzero(h.is_group).tolist()}
    classes: dict[str, set[str]] = {}  # repeated blocks: one id but for the numbers
    for g in np.flatnonzero(h.is_group).tolist():
        classes.setdefault(re.sub(r"\d+", "#", graph.nodes[g].id), set()).add(graph.nodes[g].id)
    for ids in classes.values():
        assert len({i in expanded for i in ids}) == 1  # blocks alike
        parents = {int(h.parent[names[i]]) for i in ids}
        if ids <= expanded or any(p >= 0 and graph.nodes[p].id not in expanded for p in parents):
            continue
        assert not fits(drawn(graph, expanded | ids)), ids  # opening further overflows


def test_one_group_around_everything_is_opened(tmp_path: Path) -> None:
    graph = load(torch_like(tmp_path, 40))
    from xocview.model import edits  # one group holding every top-level node

    top = [n.id for n, p in zip(graph.nodes, Hierarchy(graph).parent, strict=True) if p < 0]
    edits.group_nodes(graph, top)
    h = Hierarchy(graph)
    assert int((h.parent < 0).sum()) == 1
    assert boxes(graph, initial_expanded(graph, h)) >= MIN_BOXES


def test_a_deep_model_opens_on_more_than_a_handful_of_boxes(tmp_path: Path) -> None:
    """GPT-2's exports put 272 layers in one transformer scope, beside the inputs, the head
    and the output: five boxes tell nothing, so the transformer opens although its layers
    cannot fit; they stay closed."""
    model = transformer_like(3200)  # 320 layers
    for node in model.graph.node:
        if node.name.startswith("/layers"):
            node.name = "/transformer" + node.name
    path = tmp_path / "deep.onnx"
    onnx.save(model, path)
    graph = load(path)
    h = Hierarchy(graph)
    assert boxes(graph, set()) < MIN_BOXES
    expanded = initial_expanded(graph, h)
    assert "/transformer" in expanded
    assert not any(e.startswith("/transformer/layers") for e in expanded)


def test_a_flat_graph_shows_every_node() -> None:
    graph = load(SAMPLES / "simple_model.json")
    h = Hierarchy(graph)
    assert not h.is_group.any()
    assert boxes(graph, initial_expanded(graph, h)) == len(graph.nodes)


def test_a_small_grouped_graph_opens_until_it_shows_enough_boxes() -> None:
    """Encoder, two layers, attention and MLP blocks: seven boxes with everything closed and
    2,400 px tall fully open; the layers open (more than a handful of boxes), their blocks
    stay closed."""
    graph = load(SAMPLES / "tiny_transformer.json")
    h = Hierarchy(graph)
    expanded = initial_expanded(graph, h)
    assert expanded == {"encoder", "layer0", "layer1"}
    assert boxes(graph, expanded) >= MIN_BOXES > boxes(graph, {"encoder"})


def test_render_of_a_torch_export_is_not_a_line(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A chain of 40 blocks is wrapped into columns instead of drawn as a 1:20 strip."""
    target = tmp_path / "first.png"
    render_file(torch_like(tmp_path), target)
    image = QImage(str(target))
    assert 1 / 6 <= image.width() / image.height() <= 6


def test_a_big_graph_opens_legible_on_its_inputs(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = window.add_document(load(flat_long(tmp_path)), None)
    assert view.scale_factor == pytest.approx(1.0)
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    d = view.doc.drawing
    assert seen.top() <= float((d.y - d.h / 2).min())  # the top row (the inputs) is on screen
    inputs = [k for k, c in enumerate(d.category) if c == "input"]
    assert inputs and all(seen.contains(QPointF(d.x[k], d.y[k])) for k in inputs)
    assert seen.height() < d.height / 2
    assert view.minimap.isVisible()


def test_a_small_graph_opens_at_fit(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    view = window.add_document(load(SAMPLES / "simple_model.json"), None)
    assert view.scale_factor >= LEGIBLE_SCALE
    d = view.doc.drawing
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(QPointF(0, 0)) and seen.contains(QPointF(d.width, d.height))
    assert not view.minimap.isVisible()


def test_a_click_in_the_minimap_moves_the_view(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view: GraphView = window.add_document(load(flat_long(tmp_path)), None)
    minimap = view.minimap
    assert minimap.isVisible() and minimap.height() > 20

    def centre_y() -> float:
        return view.mapToScene(view.viewport().rect().center()).y()

    before = centre_y()
    qtbot.mouseClick(
        minimap,
        Qt.MouseButton.LeftButton,
        pos=QPoint(minimap.width() // 2, minimap.height() * 3 // 4),
    )
    assert centre_y() > before + view.viewport().height()
    after = centre_y()
    qtbot.mousePress(minimap, Qt.MouseButton.LeftButton, pos=QPoint(minimap.width() // 2, 6))
    qtbot.mouseMove(minimap, QPoint(minimap.width() // 2, minimap.height() // 4))
    qtbot.mouseRelease(minimap, Qt.MouseButton.LeftButton, pos=QPoint(minimap.width() // 2, 6))
    assert centre_y() < after


def test_an_idle_canvas_with_its_minimap_paints_no_more_frames(
    qtbot, window, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """The minimap floats over the canvas: repainting it must not paint the canvas again and
    again (each canvas frame used to repaint the minimap, which repainted the canvas...)."""
    import xocview.ui.canvas.view as canvas_view
    from xocview.ui.canvas.painter import labels_placed
    from xocview.ui.canvas.style import theme

    view: GraphView = window.add_document(load(flat_long(tmp_path)), None)
    qtbot.waitUntil(view.minimap.isVisible)
    view.viewport().grab()  # asks for the labels, placed in a worker: wait for them first
    qtbot.waitUntil(lambda: labels_placed(view.doc.drawing, theme(view.theme_name)), timeout=20000)
    frames = []
    real = canvas_view.paint_drawing
    monkeypatch.setattr(
        canvas_view, "paint_drawing", lambda *a, **k: frames.append(1) or real(*a, **k)
    )
    view.refresh()
    qtbot.waitUntil(lambda: len(frames) >= 1, timeout=10000)  # the frame asked for
    qtbot.wait(300)  # and whatever follows from it
    settled = len(frames)
    qtbot.wait(500)
    assert len(frames) == settled
    view.viewport().update()  # a repaint with nothing new comes from the cached picture
    qtbot.wait(100)
    assert len(frames) == settled


def test_a_scoped_model_opens_whole_at_a_readable_zoom(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """40 scoped blocks open at the level that fits: the window shows all of it, inputs
    included, at a zoom where titles read (in a window of the size the target assumes: a
    canvas of about 1,300 x 800)."""
    window.resize(1760, 1000)
    qtbot.wait(50)
    view = window.add_document(load(torch_like(tmp_path)), None)
    port = view.viewport().size()
    assert port.width() >= 1250 and port.height() >= 780
    assert view.scale_factor >= LEGIBLE_SCALE
    d = view.doc.drawing
    seen = view.mapToScene(view.viewport().rect()).boundingRect()
    assert seen.contains(QPointF(0, 0)) and seen.contains(QPointF(d.width, d.height))
    assert boxes_of(d) >= MIN_BOXES


def scoped_in_one_frame(tmp_path: Path, num_nodes: int) -> Graph:
    """GPT-2's shape: every block in one transformer scope between the inputs and the head."""
    model = transformer_like(num_nodes)
    for node in model.graph.node:
        if node.name.startswith("/layers"):
            node.name = "/transformer" + node.name
    path = tmp_path / "one_frame.onnx"
    onnx.save(model, path)
    return load(path)


def test_a_frame_that_almost_fills_the_window_wraps_within_the_room_left(tmp_path: Path) -> None:
    """A frame of ten closed blocks is a little shorter than the window, so on its own it does
    not wrap, but with the inputs above it and the head below, the drawing runs past the
    bottom: the first view wraps the frame lower, into columns that leave them room. Relayouts
    after a collapse keep that wrap; the same view without it does not fit."""
    graph = scoped_in_one_frame(tmp_path, 100)
    expanded, d = first_view_state(graph, Hierarchy(graph))
    assert d is not None and fits(d) and boxes_of(d) >= MIN_BOXES
    assert d.wrap_height is not None and d.wrap_height < FIT[1]
    plain = build_drawing(graph, expanded)
    assert not fits(plain) and plain.width < FIT[0]  # too tall, not too wide: the case
    inner = next(o for g, o in d.frames if graph.nodes[g].id == "/transformer")
    assert np.ptp(inner[:, 1]) < d.wrap_height + 100  # the frame itself is now short
    collapsed = build_drawing(graph, expanded - {"/transformer"}, previous=d)
    again = build_drawing(graph, expanded, previous=collapsed)
    assert again.wrap_height == d.wrap_height and fits(again)


def test_a_view_no_wrap_makes_fit_keeps_its_shape(tmp_path: Path) -> None:
    """Six layers forced open (fewer boxes would show than ``MIN_BOXES``) run past the bottom,
    and wrapping them lower only makes the drawing too wide: the plain drawing is kept."""
    graph = scoped_in_one_frame(tmp_path, 60)
    expanded, d = first_view_state(graph, Hierarchy(graph))
    assert d is not None and d.wrap_height is None
    plain = build_drawing(graph, expanded)
    assert (plain.width, plain.height) == (d.width, d.height)


def test_a_7b_checkpoint_s_first_view_fits_with_its_layers_in_rows(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A weights file has no edges: its 32 layer groups were one row 8,600 units wide."""
    from tests.perf.weight_files import sharded_safetensors

    graph = load(sharded_safetensors(tmp_path))
    expanded, drawing = first_view_state(graph, Hierarchy(graph))
    assert drawing is not None and fits(drawing) and boxes_of(drawing) >= 32
    assert "model.layers" in expanded
    rows = {
        round(float(y))
        for key, y in zip(drawing.keys, drawing.y, strict=True)
        if re.fullmatch(r"model\.layers\.\d+", key)
    }
    assert len(rows) > 2  # several rows, not one


@pytest.mark.parametrize("name", ["pt2_gpt2", "pt2_gpt2_core", "pt2_bert", "pt2_cnn"])
def test_a_torch_export_archive_s_first_view_fits(qapp, name: str) -> None:  # type: ignore[no-untyped-def]
    """A .pt2's module groups are the exporter's scopes: its loose mask ops gather into a
    cluster, a module around one op stays one box, and the drawing fits."""
    graph = load(REPO / "tests" / "data" / "pytorch" / f"{name}.pt2")
    expanded, drawing = first_view_state(graph, Hierarchy(graph))
    assert drawing is not None and fits(drawing) and boxes_of(drawing) >= MIN_BOXES
    shown = set(drawing.keys)
    if name.startswith("pt2_gpt2"):
        assert {"/gpt2/transformer/h.0", "/gpt2/transformer/h.1"} <= shown  # blocks as boxes
        assert "/gpt2/transformer/wte" in shown  # an Embedding around one Gather: one box
        assert "/gpt2/transformer/wte" not in expanded


@pytest.mark.parametrize("name", ["ts_gpt2_trace", "ts_bert_trace", "ts_cnn_script"])
def test_a_torchscript_archive_s_first_view_fits(qapp, name: str) -> None:  # type: ignore[no-untyped-def]
    """TorchScript's module calls are scopes too: the mask ops gather, the blocks show."""
    graph = load(REPO / "tests" / "data" / "pytorch" / f"{name}.pt")
    _, drawing = first_view_state(graph, Hierarchy(graph))
    assert drawing is not None and fits(drawing) and boxes_of(drawing) >= MIN_BOXES
    if name == "ts_gpt2_trace":
        assert any(n.metadata.get("derived") == "cluster" for n in graph.nodes)


@pytest.mark.parametrize(
    "path",
    [
        "same_model/saved_model",
        "same_model/model.tflite",
        "same_model/model.keras",
        "tensorflow/cnn_frozen.pb",
        "tensorflow/keras_cnn",
    ],
)
def test_tensorflow_family_files_first_views_fit_and_show_their_layers(qapp, path: str) -> None:  # type: ignore[no-untyped-def]
    """A SavedModel's serving function, a frozen graph's name scopes, a TFLite or Keras
    model's layers: the first view fits and each layer is a box, not a sprawl of its ops."""
    graph = load(REPO / "tests" / "data" / path)
    _, drawing = first_view_state(graph, Hierarchy(graph))
    assert drawing is not None and fits(drawing) and boxes_of(drawing) >= 5
    if path == "same_model/saved_model":
        shown = {graph.node(k).metadata.get("name") for k in drawing.keys if k in _ids(graph)}
        assert {"stem_1", "dw_1", "head_1"} <= shown  # Keras layer scopes, closed


def _ids(graph: Graph) -> set[str]:
    return {n.id for n in graph.nodes}


def test_a_7b_llama_folder_opens_as_its_layer_stack_that_fits(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A Hugging Face folder shaped like Llama 7B (sparse bf16 shards): its 32 decoder layers
    are boxes titled by module, and their weights' Casts fold instead of standing loose."""
    import json

    from tests.perf.weight_files import sharded_safetensors

    sharded_safetensors(tmp_path)
    config = {
        "model_type": "llama",
        "hidden_size": 4096,
        "intermediate_size": 11008,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "vocab_size": 32000,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    graph = load(tmp_path)
    _, drawing = first_view_state(graph, Hierarchy(graph))
    assert drawing is not None and fits(drawing)
    titles = {graph.node(k).metadata.get("name") for k in drawing.keys if k in _ids(graph)}
    assert {f"layers.{i}" for i in range(32)} <= titles
    assert not any(graph.node(k).op_type == "Cast" for k in drawing.keys if k in _ids(graph))
