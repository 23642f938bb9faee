"""The first view of a graph: which groups open, the zoom and place it opens at, the minimap."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QImage

from tests.conftest import REPO
from tests.perf.onnx_models import transformer_like
from xocview.formats import load
from xocview.model import Graph, Hierarchy, visible_graph
from xocview.ui.canvas.view import LEGIBLE_SCALE, GraphView
from xocview.ui.document import initial_expanded
from xocview.ui.headless import render_file

SAMPLES = REPO / "sample_graphs"


def torch_like(tmp_path: Path, num_nodes: int = 400) -> Path:
    """Blocks named by scope, as torch exports them: the ONNX reader makes scope groups."""
    path = tmp_path / "torch_like.onnx"
    onnx.save(transformer_like(num_nodes), path)
    return path


def boxes(graph: Graph, expanded: set[str]) -> int:
    return len(visible_graph(graph, expanded, tensor_kinds=()).node_items)


def test_a_torch_export_opens_at_a_readable_level(tmp_path: Path) -> None:
    graph = load(torch_like(tmp_path))
    h = Hierarchy(graph)
    assert h.is_group.any()
    leaves = int((~h.is_group).sum())
    assert boxes(graph, set()) < 100 < leaves  # all closed: too few; all open: too many
    expanded = initial_expanded(graph, h)
    assert 10 <= boxes(graph, expanded) <= 400
    # whole levels open: every block shows the same way
    layers = [g for g in range(len(graph.nodes)) if h.is_group[g] and h.depth[g] == 0]
    assert all(graph.nodes[g].id in expanded for g in layers)


def test_one_group_around_everything_is_opened(tmp_path: Path) -> None:
    graph = load(torch_like(tmp_path, 40))
    from xocview.model import edits  # one group holding every top-level node

    top = [n.id for n, p in zip(graph.nodes, Hierarchy(graph).parent, strict=True) if p < 0]
    edits.group_nodes(graph, top)
    h = Hierarchy(graph)
    assert int((h.parent < 0).sum()) == 1
    assert boxes(graph, initial_expanded(graph, h)) > 1


def test_a_deep_model_opens_on_its_layers_not_on_a_handful_of_boxes(tmp_path: Path) -> None:
    """GPT-2's exports put 272 layers (and the mask and embedding nodes) in one transformer
    scope, beside the inputs, the head and the output: more than FIRST_VIEW_BOXES, yet five
    boxes tell nothing. A level within LEVEL_LIMIT opens when the view has fewer than
    FEW_BOXES boxes; its layers stay closed."""
    from xocview.model.sections import LEVEL_LIMIT
    from xocview.ui.first_view import FEW_BOXES, FIRST_VIEW_BOXES

    model = transformer_like(3200)  # 320 layers
    for node in model.graph.node:
        if node.name.startswith("/layers"):
            node.name = "/transformer" + node.name
    path = tmp_path / "deep.onnx"
    onnx.save(model, path)
    graph = load(path)
    h = Hierarchy(graph)
    closed = boxes(graph, set())
    assert closed < FEW_BOXES
    expanded = initial_expanded(graph, h)
    assert expanded == {"/transformer"}
    assert FIRST_VIEW_BOXES < boxes(graph, expanded) <= LEVEL_LIMIT


def test_a_flat_graph_shows_every_node() -> None:
    graph = load(SAMPLES / "simple_model.json")
    h = Hierarchy(graph)
    assert not h.is_group.any()
    assert boxes(graph, initial_expanded(graph, h)) == len(graph.nodes)


def test_a_small_grouped_graph_opens_fully() -> None:
    graph = load(SAMPLES / "tiny_transformer.json")
    h = Hierarchy(graph)
    groups = {graph.nodes[g].id for g in range(len(graph.nodes)) if h.is_group[g]}
    assert groups and initial_expanded(graph, h) == groups


def test_render_of_a_torch_export_is_not_a_line(qapp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A chain of 40 blocks is wrapped into columns instead of drawn as a 1:20 strip."""
    target = tmp_path / "first.png"
    render_file(torch_like(tmp_path), target)
    image = QImage(str(target))
    assert 1 / 6 <= image.width() / image.height() <= 6


def test_a_big_graph_opens_legible_on_its_inputs(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = window.add_document(load(torch_like(tmp_path)), None)
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
    view: GraphView = window.add_document(load(torch_like(tmp_path)), None)
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

    view: GraphView = window.add_document(load(torch_like(tmp_path)), None)
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
