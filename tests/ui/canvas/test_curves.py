"""The painted edge curves (not only the layout's routes) stay out of the boxes they do not
join, on first views of real models in both directions: a curve rounds only the corners."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.perf.onnx_models import transformer_like
from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import build_drawing
from xocview.ui.canvas.edge_paint import CORNER, _curve, corner_points
from xocview.ui.document import initial_expanded

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
CORPUS = Path(__file__).resolve().parents[4] / "shared" / "corpus"


def _models(tmp: Path) -> list[Path]:
    found = [LIGHT / f"light_{m}.onnx" for m in ("inception_v1", "resnet50", "vgg19")]
    found += [CORPUS / "nnvm" / "mxnet08_mtcnn_det4-symbol.json"]
    path = tmp / "torch_like.onnx"
    onnx.save(transformer_like(120), str(path))
    return [p for p in found if p.is_file()] + [path]


def test_corners_are_rounded_within_the_radius() -> None:
    route = np.array([[0.0, 0.0], [0.0, 500.0], [300.0, 500.0], [300.0, 510.0]])
    before, corner, after = corner_points(route).transpose(1, 0, 2)
    assert np.allclose(corner, route[1:-1])
    # the long corner rounds with the full radius, the one beside a 10-unit segment with half
    assert np.allclose(np.hypot(*(before - corner).T), [CORNER, 5.0])
    assert np.allclose(np.hypot(*(after - corner).T), [CORNER, 5.0])


@pytest.mark.parametrize("direction", ["TB", "LR"])
def test_painted_curves_go_around_boxes(qapp, tmp_path: Path, direction: str) -> None:  # type: ignore[no-untyped-def]
    for path in _models(tmp_path):
        graph = load(path)
        d = build_drawing(graph, initial_expanded(graph, Hierarchy(graph)), direction=direction)
        for e, pts in enumerate(d.edges):
            curve = _curve(pts)
            t = np.linspace(0.0, 1.0, 200)
            xy = np.array([[p.x(), p.y()] for p in map(curve.pointAtPercent, t)])
            inside = (np.abs(xy[:, None, 0] - d.x) < d.w / 2 - 1.0) & (
                np.abs(xy[:, None, 1] - d.y) < d.h / 2 - 1.0
            )
            hit = set(np.flatnonzero(inside.any(axis=0)).tolist())
            hit -= {int(d.edge_src[e]), int(d.edge_dst[e])}
            assert not hit, f"{path.name} {direction}: edge {e} is painted through boxes {hit}"


@pytest.mark.parametrize("detail", [True, False])
def test_a_long_route_cut_to_the_frame_paints_the_same_pixels_there(qapp, detail: bool) -> None:  # type: ignore[no-untyped-def]
    from PySide6.QtGui import QImage, QPainter

    from xocview.ui.canvas.drawing import Drawing
    from xocview.ui.canvas.edge_paint import paint_edges as _edges
    from xocview.ui.canvas.style import theme

    # a staircase route of 200 corners down a 4000-unit drawing, seen through a 300x300 frame
    ys = np.repeat(np.arange(0.0, 4000.0, 40.0), 2)[1:]
    xs = np.where(np.arange(len(ys)) // 2 % 2 == 0, 100.0, 180.0)
    route = np.column_stack([xs, ys])
    d = Drawing(
        x=np.zeros(0), y=np.zeros(0), w=np.zeros(0), h=np.zeros(0), kind=np.zeros(0, np.int64),
        title=[], detail=[], category=[], item_node=np.zeros(0, np.int64),
        item_tensor=np.zeros(0, np.int64), edges=[route], edge_src=np.zeros(1, np.int64),
        edge_dst=np.zeros(1, np.int64), edge_tensor=np.zeros(1, np.int64), edge_label=[""],
    )  # fmt: skip
    frame = (0.0, 1800.0, 300.0, 2100.0)

    def paint(rect: tuple[float, float, float, float]) -> QImage:
        image = QImage(300, 300, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(0)
        painter = QPainter(image)
        painter.translate(0, -frame[1])
        _edges(painter, d, theme("light"), np.array([0]), detail, set(), rect)
        painter.end()
        return image

    whole = paint((-1e9, -1e9, 1e9, 1e9))
    assert paint(frame) == whole
    assert whole != paint((0.0, 0.0, 300.0, 300.0))  # a frame elsewhere paints nothing here


def test_edges_that_share_a_route_are_stroked_once_and_look_the_same(  # type: ignore[no-untyped-def]
    qapp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 edges down one staircase lane, each leaving it at its own step: painted piece by
    piece (each distinct piece once), the same pixels are inked as edge by edge."""
    from PySide6.QtGui import QImage, QPainter

    from xocview.ui.canvas import edge_paint, edge_pieces
    from xocview.ui.canvas.drawing import Drawing
    from xocview.ui.canvas.style import theme

    ys = np.repeat(np.arange(0.0, 3000.0, 40.0), 2)[1:]
    xs = np.where(np.arange(len(ys)) // 2 % 2 == 0, 100.0, 180.0)
    lane = np.column_stack([xs, ys])
    edges = [
        np.vstack([lane[: 2 + k % 140], [[400.0 + k, lane[1 + k % 140, 1] + 30.0]]])
        for k in range(300)
    ]
    n = len(edges)
    d = Drawing(
        x=np.zeros(0), y=np.zeros(0), w=np.zeros(0), h=np.zeros(0), kind=np.zeros(0, np.int64),
        title=[], detail=[], category=[], item_node=np.zeros(0, np.int64),
        item_tensor=np.zeros(0, np.int64), edges=edges, edge_src=np.zeros(n, np.int64),
        edge_dst=np.zeros(n, np.int64), edge_tensor=np.zeros(n, np.int64), edge_label=[""] * n,
    )  # fmt: skip

    def inked(shared_from: int) -> np.ndarray:
        monkeypatch.setattr(edge_paint, "SHARED_FROM", shared_from)
        image = QImage(800, 3100, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(0)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        edge_paint.paint_edges(
            painter, d, theme("light"), np.arange(n), True, set(), (0, 0, 800, 3100)
        )
        painter.end()
        alpha = np.frombuffer(image.constBits(), np.uint8).reshape(3100, 800, 4)[..., 3]
        return alpha > 96  # clearly inked: the anti-aliased fringe may differ

    lines, _, quads, _ = edge_pieces._pieces(d)
    assert (
        len(np.unique(lines, axis=0)) + len(np.unique(quads, axis=0))
        < (len(lines) + len(quads)) / 20
    )
    each, shared = inked(10**9), inked(0)
    assert each.sum() > 10_000
    assert (each != shared).sum() < 0.03 * each.sum()  # 1.5% here: overlaps darken the fringe
