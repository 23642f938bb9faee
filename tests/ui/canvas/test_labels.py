"""Shape labels on edges: one per tensor, placed where they overlap no label, box or frame title.

The hand-made drawings check the placement's rules with a fixed-width font; the first views of
real models check the very rectangles the painter paints (its font metrics, its cache).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.perf.onnx_models import transformer_like
from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import KIND_NODE, Drawing, build_drawing
from xocview.ui.canvas.labels import (
    HALO,
    Placement,
    forms,
    place_labels,
    shorten,
    title_band,
    wrap,
)
from xocview.ui.document import initial_expanded

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
H = 10.0


def width_of(text: str) -> float:
    return 6.0 * len(text)


def drawing(
    boxes: list[tuple[float, float, float, float]],
    edges: list[tuple[int, int, int, list[tuple[float, float]]]],
    labels: dict[int, str],
    frames: list[np.ndarray] | None = None,
) -> Drawing:
    """Boxes (centre x, y, w, h) and edges (src, dst, tensor, polyline); no layout."""
    b = np.array(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(b)
    pts = [np.array(p, dtype=np.float64) for *_, p in edges]
    return Drawing(
        x=b[:, 0],
        y=b[:, 1],
        w=b[:, 2],
        h=b[:, 3],
        kind=np.full(n, KIND_NODE),
        title=["Op"] * n,
        detail=[""] * n,
        category=["custom"] * n,
        item_node=np.arange(n),
        item_tensor=np.full(n, -1),
        edges=pts,
        edge_src=np.array([e[0] for e in edges], dtype=np.int64),
        edge_dst=np.array([e[1] for e in edges], dtype=np.int64),
        edge_tensor=np.array([e[2] for e in edges], dtype=np.int64),
        edge_label=[labels[e[2]] for e in edges],
        frames=[(k, o) for k, o in enumerate(frames or [])],
        frame_titles=["frame"] * len(frames or []),
        width=float((b[:, 0] + b[:, 2] / 2).max()),
        height=float((b[:, 1] + b[:, 3] / 2).max()),
    )


def rects(p: Placement) -> np.ndarray:
    return np.c_[p.x, p.y, p.x + p.w, p.y + p.h]


def overlaps(a: np.ndarray, b: np.ndarray, same: bool = False) -> int:
    """Pairs of rectangles (x0, y0, x1, y1) of ``a`` and ``b`` whose interiors meet."""
    if not len(a) or not len(b):
        return 0
    meet = (
        (a[:, None, 0] < b[None, :, 2])
        & (b[None, :, 0] < a[:, None, 2])
        & (a[:, None, 1] < b[None, :, 3])
        & (b[None, :, 1] < a[:, None, 3])
    )
    if same:
        return int(np.triu(meet, 1).sum())
    return int(meet.sum())


def box_rects(d: Drawing) -> np.ndarray:
    return np.c_[d.x - d.w / 2, d.y - d.h / 2, d.x + d.w / 2, d.y + d.h / 2]


def band_rects(d: Drawing) -> np.ndarray:
    bands = np.array([title_band(o) for _, o in d.frames]).reshape(-1, 4)
    return np.c_[bands[:, :2], bands[:, :2] + bands[:, 2:]]


def chain(gap: float, box_w: float = 80.0) -> Drawing:
    """Two boxes one above the other, ``gap`` apart, and one edge between them."""
    return drawing(
        [(100, 20, box_w, 40), (100, 60 + gap, box_w, 40)],
        [(0, 1, 0, [(100, 40), (100, 40 + gap)])],
        {0: "1x64x56x56"},
    )


def test_a_label_sits_beside_its_edge_between_the_boxes() -> None:
    d = chain(48)
    p = place_labels(d, width_of, H)
    assert p.count == 1 and p.text == ["1x64x56x56"] and p.edge.tolist() == [0]
    assert p.w[0] >= width_of("1x64x56x56") and p.h[0] == H
    assert p.y[0] > 40 and p.y[0] + H < 88  # between the boxes
    assert p.x[0] > 100 or p.x[0] + p.w[0] < 100  # beside the line, not on it
    assert overlaps(rects(p), box_rects(d)) == 0


def test_two_labels_whose_natural_spots_collide_get_different_spots() -> None:
    # two tensors on edges that run side by side: both would sit right of the line at mid-height
    d = drawing(
        [(100, 20, 80, 40), (100, 140, 80, 40)],
        [(0, 1, 0, [(100, 40), (100, 120)]), (0, 1, 1, [(100, 40), (100, 120)])],
        {0: "1x64x128", 1: "1x1x1x64"},
    )
    p = place_labels(d, width_of, H)
    assert p.count == 2 and sorted(p.text) == ["1x1x1x64", "1x64x128"]
    assert overlaps(rects(p), rects(p), same=True) == 0
    assert overlaps(rects(p), box_rects(d)) == 0


def test_a_label_that_fits_nowhere_is_hidden_not_drawn_over_a_box() -> None:
    p = place_labels(chain(6), width_of, H)  # boxes 6 apart: no room for a 10-high label
    assert p.count == 0 and p.wanted == 1 and p.hidden == 1


def test_a_label_takes_two_lines_where_one_is_too_wide() -> None:
    # left to right, tall boxes 56 apart: the full text (69 wide) cannot sit between them
    d = drawing(
        [(20, 100, 40, 80), (116, 100, 40, 80)],
        [(0, 1, 0, [(40, 100), (96, 100)])],
        {0: "1x3x224x224"},
    )
    p = place_labels(d, width_of, H)
    assert p.text == [wrap("1x3x224x224")] == ["1x3x\n224x224"]
    assert p.h[0] == 2 * H
    assert overlaps(rects(p), box_rects(d)) == 0


def test_a_label_is_shortened_only_where_nothing_else_fits() -> None:
    # top to bottom, boxes 16 apart (one line high), walls 50 apart left and right of the edge
    d = drawing(
        [(100, 20, 40, 40), (100, 76, 40, 40), (35, 48, 80, 200), (165, 48, 80, 200)],
        [(0, 1, 0, [(100, 40), (100, 56)])],
        {0: "1x3x224x224"},
    )
    p = place_labels(d, width_of, H)
    assert p.text == [shorten("1x3x224x224")] == ["1x\u2026x224"]
    assert overlaps(rects(p), box_rects(d)) == 0


def test_forms_come_full_then_on_two_lines_then_shortened() -> None:
    assert forms("1x64x112x112") == ("1x64x112x112", "1x64x\n112x112", "1x\u2026x112")
    assert forms("64") == ("64", "", "")  # nothing shorter: no other form
    assert shorten("1x64x56x56") == "1x\u2026x56"
    assert len(shorten("1000x4096")) < len("1000x4096")


def test_a_tensor_read_by_three_nodes_is_labelled_once_near_its_producer() -> None:
    d = drawing(
        [(200, 20, 80, 40), (60, 300, 80, 40), (200, 300, 80, 40), (340, 300, 80, 40)],
        [
            (0, 1, 7, [(190, 40), (100, 100), (60, 280)]),
            (0, 2, 7, [(200, 40), (200, 100), (200, 280)]),
            (0, 3, 7, [(210, 40), (300, 100), (340, 280)]),
        ],
        {7: "1x256x14x14"},
    )
    p = place_labels(d, width_of, H)
    assert p.count == 1 and p.wanted == 1 and p.tensor.tolist() == [7]
    assert p.y[0] + H / 2 < 160  # in the upper half: near the producer, not the readers
    assert overlaps(rects(p), box_rects(d)) == 0


def test_unknown_and_empty_shapes_get_no_label() -> None:
    d = drawing(
        [(100, 20, 80, 40), (100, 140, 80, 40), (300, 140, 80, 40)],
        [(0, 1, 0, [(100, 40), (100, 120)]), (0, 2, 1, [(120, 40), (300, 120)])],
        {0: "?", 1: ""},
    )
    p = place_labels(d, width_of, H)
    assert p.count == 0 and p.wanted == 0


def test_labels_keep_out_of_frame_title_bands() -> None:
    # a frame whose title band spans the edge's whole gap, right where its label would go
    outline = np.array([(300, 50), (300, 300), (0, 300), (0, 50)], dtype=np.float64)
    d = drawing(
        [(100, 20, 80, 40), (100, 120, 80, 40)],
        [(0, 1, 0, [(100, 40), (100, 100)])],
        {0: "1x8"},
        frames=[outline],
    )
    p = place_labels(d, width_of, H)
    assert p.count == 1
    assert overlaps(rects(p), band_rects(d)) == 0
    assert overlaps(rects(p), box_rects(d)) == 0


def test_five_thousand_edges_place_in_well_under_a_second() -> None:
    """26 rows of 100 boxes, each box's tensor read by the box below and maybe by a neighbour
    of it: 5,000 edges (placing them took about 0.2 s when this was written)."""
    rng = np.random.default_rng(0)
    cols, rows = 100, 26
    boxes = [(c * 140.0, r * 90.0, 90.0, 40.0) for r in range(rows) for c in range(cols)]
    edges = []
    for r in range(rows - 1):
        for c in range(cols):
            src = r * cols + c
            for dc in (0, int(rng.integers(-1, 2))):
                dst = (r + 1) * cols + min(max(c + dc, 0), cols - 1)
                a = (boxes[src][0], boxes[src][1] + 20)
                b = (boxes[dst][0], boxes[dst][1] - 20)
                edges.append((src, dst, src, [a, ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2), b]))
    assert len(edges) == 5000
    d = drawing(boxes, edges, {t: f"1x{t}x56x56" for t in range(rows * cols)})
    start = time.perf_counter()
    p = place_labels(d, width_of, H)
    seconds = time.perf_counter() - start
    assert p.count > 0.9 * p.wanted
    assert overlaps(rects(p), rects(p), same=True) == 0
    assert seconds < 1.0, f"{seconds:.2f} s for 5,000 edges"


def first_views() -> list[object]:
    """The ONNX light models (or one skip saying why there are none) and a torch-style export."""
    light: list[object] = [pytest.param(p, id=p.stem) for p in sorted(LIGHT.glob("*.onnx"))]
    if not light:
        reason = f"no ONNX light models in {LIGHT} (this onnx package does not ship them)"
        light = [pytest.param(None, id="light", marks=pytest.mark.skip(reason=reason))]
    return [*light, pytest.param("torch_like", id="torch_like")]


@pytest.mark.parametrize("model", first_views())
def test_first_views_draw_no_label_over_a_label_a_box_or_a_frame_title(
    qapp,  # type: ignore[no-untyped-def]
    tmp_path: Path,
    model: Path | str,
) -> None:
    from xocview.ui.canvas.painter import placed_labels
    from xocview.ui.canvas.style import theme

    if model == "torch_like":
        model = tmp_path / "torch_like.onnx"
        onnx.save(transformer_like(400), model)
    assert isinstance(model, Path)
    graph = load(model)
    expanded = initial_expanded(graph, Hierarchy(graph))
    for direction in ("TB", "LR"):
        d = build_drawing(graph, expanded, direction=direction)
        p = placed_labels(d, theme("light"))  # what the painter paints, in its font
        assert p is placed_labels(d, theme("light"))  # placed once per drawing
        labels = rects(p)
        assert overlaps(labels, labels, same=True) == 0, direction
        assert overlaps(labels, box_rects(d)) == 0, direction
        assert overlaps(labels, band_rects(d)) == 0, direction
        grown = labels + np.array([-HALO, -HALO, HALO, HALO]) * 0.99
        assert overlaps(grown, box_rects(d)) == 0, direction  # the halo stays clear too
        assert len(set(p.tensor.tolist())) == p.count  # one label per tensor
        assert p.count >= 0.9 * p.wanted, f"{direction}: {p.count} of {p.wanted} placed"


@pytest.mark.parametrize("scale", [1.0, 0.5])
def test_the_painter_draws_labels_in_their_rectangles_at_detail_zoom_only(
    qapp,  # type: ignore[no-untyped-def]
    scale: float,
) -> None:
    from PySide6.QtCore import QRectF
    from PySide6.QtGui import QImage, QPainter

    from xocview.ui.canvas.painter import LOD_DETAIL, paint_drawing, placed_labels
    from xocview.ui.canvas.style import theme

    style = theme("light")
    d = chain(48)
    p = placed_labels(d, style)
    assert p.count == 1
    image = QImage(240, 160, QImage.Format.Format_ARGB32)
    image.fill(style.background)
    painter = QPainter(image)
    painter.scale(scale, scale)
    paint_drawing(painter, d, style, QRectF(0, 0, 240 / scale, 160 / scale), scale)
    painter.end()
    x0, y0 = int(p.x[0] * scale), int(p.y[0] * scale)
    x1, y1 = int((p.x[0] + p.w[0]) * scale), int((p.y[0] + p.h[0]) * scale)
    inside = [(x, y) for x in range(x0 + 1, x1 - 1) for y in range(y0 + 1, y1 - 1)]
    inked = {image.pixel(x, y) for x, y in inside} - {style.background.rgba()}
    assert bool(inked) == (scale >= LOD_DETAIL)


def test_a_view_places_labels_off_the_gui_thread_and_repaints_with_them(  # type: ignore[no-untyped-def]
    qtbot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first close-up paint leaves the labels out and has them placed in a worker."""
    import threading

    from tests.conftest import REPO
    from xocview.ui.canvas import painter
    from xocview.ui.canvas.style import theme
    from xocview.ui.canvas.view import GraphView
    from xocview.ui.document import Document

    doc = Document(load(REPO / "sample_graphs" / "simple_model.json"), None)
    threads: list[str] = []
    real = painter.place_labels

    def recording(*args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(painter, "place_labels", recording)
    view = GraphView(doc)
    qtbot.addWidget(view)
    view.resize(800, 600)
    view.show()
    view.zoom_to(1.0)
    view.viewport().grab()
    qtbot.waitUntil(lambda: painter.labels_placed(doc.drawing, theme("light")), timeout=10000)
    assert threads == ["xocview-labels"]


def test_a_placement_told_to_stop_stops_between_its_phases() -> None:
    from xocview.ui.canvas.labels import Stopped

    d = chain(gap=60.0)
    asked = []

    def stop() -> bool:  # answers "go on" twice, then "stop"
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(Stopped):
        place_labels(d, width_of, 12.0, stop)
    assert len(asked) == 3
    assert place_labels(d, width_of, 12.0, lambda: False).count > 0  # not told: it places
