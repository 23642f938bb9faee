"""An expand or collapse lays out only what changed, and draws exactly what a fresh layout draws."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as oh

from tests.ui.test_control_flow_frames import _model as control_flow_model
from xocview.formats import load
from xocview.model import Graph, Hierarchy
from xocview.model.edits import set_attribute
from xocview.ui.canvas.drawing import Drawing, build_drawing


def _scoped(path: Path, blocks: int = 6) -> Path:
    """Blocks named by scope (/layers.i/attn/..., /layers.i/mlp/...) with a residual stream
    and a mask read by every block, as torch exports them."""
    nodes = []
    x = "x"
    for i in range(blocks):
        p = f"/layers.{i}"
        nodes += [
            oh.make_node("MatMul", [x, "w"], [f"{p}/q"], name=f"{p}/attn/MatMul"),
            oh.make_node("Add", [f"{p}/q", "mask"], [f"{p}/m"], name=f"{p}/attn/Add"),
            oh.make_node("Softmax", [f"{p}/m"], [f"{p}/s"], name=f"{p}/attn/Softmax"),
            oh.make_node("Add", [x, f"{p}/s"], [f"{p}/r"], name=f"{p}/Add"),
            oh.make_node("Relu", [f"{p}/r"], [f"{p}/a"], name=f"{p}/mlp/act/Relu"),
            oh.make_node("MatMul", [f"{p}/a", "w"], [f"{p}/o"], name=f"{p}/mlp/MatMul"),
            oh.make_node("Add", [f"{p}/r", f"{p}/o"], [f"{p}/y"], name=f"{p}/Add_1"),
        ]
        x = f"{p}/y"
    nodes.append(oh.make_node("Identity", [x], ["y"], name="/out/Identity"))
    graph = oh.make_graph(
        nodes,
        "scoped",
        [
            oh.make_tensor_value_info("x", T.FLOAT, [2, 8]),
            oh.make_tensor_value_info("mask", T.FLOAT, [2, 8]),
        ],
        [oh.make_tensor_value_info("y", T.FLOAT, [2, 8])],
        [oh.make_tensor("w", T.FLOAT, [8, 8], np.eye(8, dtype=np.float32).ravel())],
    )
    out = path / "scoped.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), out)
    return out


def _same(a: Drawing, b: Drawing) -> None:
    assert a.keys == b.keys
    np.testing.assert_allclose(a.x, b.x)
    np.testing.assert_allclose(a.y, b.y)
    assert len(a.edges) == len(b.edges)
    for p, q in zip(a.edges, b.edges, strict=True):
        np.testing.assert_allclose(p, q)
    assert [g for g, _ in a.frames] == [g for g, _ in b.frames]
    for (_, p), (_, q) in zip(a.frames, b.frames, strict=True):
        np.testing.assert_allclose(p, q)
    assert (a.width, a.height) == (b.width, b.height)


def _groups(graph: Graph) -> list[str]:
    h = Hierarchy.of(graph)
    return [graph.nodes[i].id for i in np.flatnonzero(h.is_group).tolist()]


@pytest.mark.parametrize("direction", ["TB", "LR"])
@pytest.mark.parametrize("make", [_scoped, control_flow_model])
def test_toggles_draw_what_a_fresh_layout_draws(tmp_path: Path, make, direction: str) -> None:  # type: ignore[no-untyped-def]
    graph = load(make(tmp_path))
    groups = _groups(graph)
    assert len(groups) >= 2
    rng = random.Random(7)
    expanded: set[str] = set()
    previous = build_drawing(graph, expanded, direction=direction)
    for _ in range(12):
        expanded ^= {rng.choice(groups)}
        again = build_drawing(
            graph, expanded, direction=direction, previous=previous, order_hint={}
        )
        _same(again, build_drawing(graph, expanded, direction=direction, order_hint={}))
        previous = again


def test_a_toggle_keeps_the_order_of_what_it_lays_out_again(tmp_path: Path) -> None:
    """Without a hint of its own, a relayout takes the previous drawing's places as one."""
    graph = load(_scoped(tmp_path))
    everything = set(_groups(graph))
    full = build_drawing(graph, everything)
    h = Hierarchy.of(graph)
    layers = [g for g in _groups(graph) if h.depth[graph.index.node_position(g)] == 0]
    again = full
    for g in layers:  # close and reopen every block: each comes back as it was, in order
        again = build_drawing(graph, everything - {g}, previous=again)
        again = build_drawing(graph, everything, previous=again)
    assert again.keys == full.keys
    corner = {}
    for d in (full, again):
        frames = {g: outline for g, outline in d.frames}
        assert frames.keys() == {graph.index.node_position(g) for g in everything}
        corner[id(d)] = frames
    for g, outline in full.frames:
        np.testing.assert_allclose(np.ptp(outline, axis=0), np.ptp(corner[id(again)][g], axis=0))
    nodes = np.flatnonzero(full.item_node >= 0)
    nodes = nodes[h.parent[full.item_node[nodes]] >= 0]  # the boxes inside a group
    inner = h.parent[full.item_node[nodes]]
    for d in (full, again):  # each box's place in its group's frame
        frames = corner[id(d)]
        left = np.array([frames[int(p)][:, 0].min() for p in inner])
        top = np.array([frames[int(p)][:, 1].min() for p in inner])
        corner[id(d), "rel"] = np.c_[d.x[nodes] - left, d.y[nodes] - top]
    np.testing.assert_allclose(corner[id(again), "rel"], corner[id(full), "rel"])
    blocks = [graph.index.node_position(g) for g in layers]
    for d in (full, again):  # the blocks in the same order
        where = [corner[id(d)][b][:, 0].min() + corner[id(d)][b][:, 1].min() * 1e-6 for b in blocks]
        corner[id(d), "order"] = np.argsort(where)
    np.testing.assert_array_equal(corner[id(again), "order"], corner[id(full), "order"])


def test_a_collapse_keeps_the_layouts_of_the_groups_it_does_not_reach(tmp_path: Path) -> None:
    graph = load(_scoped(tmp_path))
    everything = set(_groups(graph))
    full = build_drawing(graph, everything)
    closing = "/layers.4/mlp"
    after = build_drawing(graph, everything - {closing}, previous=full)
    before_levels = full.layout_state.levels  # type: ignore[attr-defined]
    after_levels = after.layout_state.levels  # type: ignore[attr-defined]
    index = graph.index
    untouched = index.node_position("/layers.1/attn")
    reached = index.node_position("/layers.4")
    assert after_levels[untouched] is before_levels[untouched]  # kept as it was
    assert after_levels[reached] is not before_levels[reached]  # its box changed: laid out
    assert index.node_position(closing) not in after_levels  # now one closed box


def test_an_edit_makes_a_fresh_layout(tmp_path: Path) -> None:
    graph = load(_scoped(tmp_path))
    everything = set(_groups(graph))
    before = build_drawing(graph, everything)
    set_attribute(graph, "/layers.0/attn/Softmax", "axis", 0)
    after = build_drawing(graph, everything, previous=before)
    assert after.layout_of is graph.index is not before.layout_of
    _same(after, build_drawing(graph, everything))
