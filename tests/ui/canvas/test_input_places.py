"""A graph input sits straight above the box that reads it when the way down is clear."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import build_drawing
from xocview.ui.first_view import first_view_state

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def test_densenets_input_is_drawn_above_its_first_conv_not_above_the_frames_middle() -> None:
    """DenseNet-121 opens on its first part, a frame wrapped in columns: the input used to sit
    above the frame's middle (a Concat), its edge running across to the first Conv."""
    graph = load(LIGHT / "light_densenet121.onnx")
    expanded, d = first_view_state(graph, Hierarchy(graph))
    d = d or build_drawing(graph, expanded)
    k = [i for i, c in enumerate(d.category) if c == "input"]
    assert len(k) == 1
    e = int(np.flatnonzero(d.edge_src == k[0])[0])
    reader = int(d.edge_dst[e])
    assert graph.nodes[int(d.item_node[reader])].op_type == "Conv"
    assert d.x[k[0]] == d.x[reader]
    line = d.edges[e]
    assert np.allclose(line[:, 0], d.x[reader])  # straight down
    assert line[0, 1] < line[-1, 1]


def test_a_moved_input_lands_on_no_other_box() -> None:
    graph = load(LIGHT / "light_densenet121.onnx")
    expanded, d = first_view_state(graph, Hierarchy(graph))
    d = d or build_drawing(graph, expanded)
    k = next(i for i, c in enumerate(d.category) if c == "input")
    others = np.ones(d.count, dtype=bool)
    others[k] = False
    overlap = (np.abs(d.x[others] - d.x[k]) < (d.w[others] + d.w[k]) / 2) & (
        np.abs(d.y[others] - d.y[k]) < (d.h[others] + d.h[k]) / 2
    )
    assert not overlap.any()
