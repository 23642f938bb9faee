"""Frames are hairlines on one faint fill: nested frames do not stack greys (before, each
level laid another translucent grey over its parent's), and depth shows in the title."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as oh
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPainter

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.canvas.painter import paint_drawing
from xocview.ui.canvas.style import theme
from xocview.ui.headless import ensure_gui_application


def _nested(path: Path) -> Drawing:
    """Four levels of scopes (a/b/c/d), a Relu at each (two in the innermost), all open."""
    scopes = ["/a", "/a/b", "/a/b/c", "/a/b/c/d", "/a/b/c/d"]  # a node at every depth
    names = ["x", "t1", "t2", "t3", "t4", "out"]
    nodes = [
        oh.make_node("Relu", [names[k]], [names[k + 1]], name=f"{scope}/Relu_{k}")
        for k, scope in enumerate(scopes)
    ]
    graph = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [oh.make_tensor_value_info("out", T.FLOAT, [1, 4])],
    )
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), path)
    g = load(path)
    h = Hierarchy.of(g)
    return build_drawing(g, {g.nodes[i].id for i in range(len(g.nodes)) if h.is_group[i]})


def _picture(d: Drawing, name: str) -> QImage:
    style = theme(name)
    image = QImage(int(d.width) + 20, int(d.height) + 20, QImage.Format.Format_RGB32)
    image.fill(style.background)
    painter = QPainter(image)
    paint_drawing(painter, d, style, QRectF(0, 0, d.width + 20, d.height + 20), 1.0)
    painter.end()
    return image


def _corner(outline: np.ndarray) -> tuple[int, int]:
    """A point just inside a frame's bottom-right corner: inside it and every frame around
    it, outside any box and title."""
    return int(outline[:, 0].max()) - 4, int(outline[:, 1].max()) - 4


def test_nested_frames_share_one_fill_and_solid_hairlines(tmp_path: Path) -> None:
    ensure_gui_application()
    d = _nested(tmp_path / "nested.onnx")
    assert len(d.frames) == 4
    assert d.frame_depth.tolist() == [0, 1, 2, 3]
    for name in ("light", "dark"):
        style = theme(name)
        image = _picture(d, name)
        fills = {QColor(image.pixel(*_corner(outline))).name() for _, outline in d.frames}
        assert fills == {style.frame_brush.color().name()}, (name, fills)
        assert style.frame_pen.style().name == "SolidLine"
        assert style.frame_pen.isCosmetic()
        # low contrast: the hairline is nearer the fill than the text colour is
        line, fill, text = style.frame_pen.color(), style.frame_brush.color(), style.text

        def gap(a: QColor, b: QColor) -> int:
            return abs(a.lightness() - b.lightness())

        assert gap(line, fill) < gap(text, fill) / 3
        # the outermost title stands out from the innermost one
        outer, inner = style.frame_titles[0], style.frame_titles[-1]
        assert outer[0].bold() and not inner[0].bold()
        assert gap(outer[1], fill) > gap(inner[1], fill)
