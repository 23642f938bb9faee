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


def test_a_saved_models_input_sits_above_its_signature_frame_not_on_its_title() -> None:
    """A SavedModel's top level is its input, one tall signature frame and its output: the
    frame is not wrapped away from its input into columns, and no input lands on a frame."""
    from tests.conftest import REPO

    graph = load(REPO / "tests" / "data" / "same_model" / "saved_model")
    expanded, d = first_view_state(graph, Hierarchy(graph))
    d = d or build_drawing(graph, expanded)
    k = next(i for i, c in enumerate(d.category) if c == "input")
    top, bottom = d.y[k] - d.h[k] / 2, d.y[k] + d.h[k] / 2
    left, right = d.x[k] - d.w[k] / 2, d.x[k] + d.w[k] / 2
    assert d.frames
    for _, corners in d.frames:
        (x0, y0), (x1, y1) = corners.min(axis=0), corners.max(axis=0)
        assert not (x0 < right and left < x1 and y0 < bottom and top < y1)
        assert bottom < y0  # above every frame, as its reader is inside them
    e = int(np.flatnonzero(d.edge_src == k)[0])
    assert np.allclose(d.edges[e][:, 0], d.x[k])  # straight down into the frame


def test_one_layer_as_tall_as_the_rest_is_not_wrapped_into_columns() -> None:
    """Columns beside a frame that holds most of the height buy nothing but lanes."""
    from xocview.layout.wrap import plan_columns

    heights = np.array([34.0, 900.0, 34.0])  # an input, a tall frame, an output
    centres = np.cumsum(heights + 40.0) - heights / 2
    one = np.zeros(3)
    args = (np.arange(3), one, np.full(3, 100.0), centres, heights, np.arange(2), np.arange(2))
    assert plan_columns(*args, max_aspect=1.0, target=1.0, gap=20.0, room=600.0) is None
    many = np.full(30, 60.0)  # thirty even layers still wrap to that room
    centres = np.cumsum(many + 40.0) - many / 2
    args = (np.arange(30), np.zeros(30), np.full(30, 100.0), centres, many)
    columns = plan_columns(*args, np.arange(29), np.arange(29), max_aspect=1.0, target=1.0,
                           gap=20.0, room=600.0)  # fmt: skip
    assert columns is not None and columns.count >= 5
