"""An open If or Loop: its box heads its frame, each body has a titled frame inside it, and a
body's own inputs are drawn inside the body, never as graph inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as oh

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import KIND_GROUP, KIND_TENSOR, build_drawing


def _model(path: Path) -> Path:
    then_g = oh.make_graph(
        [oh.make_node("Relu", ["x"], ["t1"]), oh.make_node("Mul", ["t1", "x"], ["then_out"])],
        "then",
        [],
        [oh.make_tensor_value_info("then_out", T.FLOAT, [1, 8])],
    )
    else_g = oh.make_graph(
        [oh.make_node("Neg", ["x"], ["e1"]), oh.make_node("Add", ["e1", "x"], ["else_out"])],
        "else",
        [],
        [oh.make_tensor_value_info("else_out", T.FLOAT, [1, 8])],
    )
    body = oh.make_graph(
        [oh.make_node("Add", ["acc", "x"], ["acc2"]), oh.make_node("Identity", ["c"], ["c2"])],
        "body",
        [
            oh.make_tensor_value_info("i", T.INT64, []),
            oh.make_tensor_value_info("c", T.BOOL, []),
            oh.make_tensor_value_info("acc", T.FLOAT, [1, 8]),
        ],
        [
            oh.make_tensor_value_info("c2", T.BOOL, []),
            oh.make_tensor_value_info("acc2", T.FLOAT, [1, 8]),
        ],
    )
    nodes = [
        oh.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
        oh.make_node("Greater", ["s", "zero"], ["cond"]),
        oh.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g, name="pick"),
        oh.make_node("Loop", ["n", "yes", "y"], ["z"], body=body, name="repeat"),
        oh.make_node("Softmax", ["z"], ["out"]),
    ]
    graph = oh.make_graph(
        nodes,
        "cf",
        [oh.make_tensor_value_info("x", T.FLOAT, [1, 8])],
        [oh.make_tensor_value_info("out", T.FLOAT, [1, 8])],
        initializer=[
            oh.make_tensor("zero", T.FLOAT, [], [0.0]),
            oh.make_tensor("n", T.INT64, [], [3]),
            oh.make_tensor("yes", T.BOOL, [], [True]),
        ],
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    target = path / "control_flow.onnx"
    onnx.save(model, str(target))
    return target


def _rect(outline: np.ndarray) -> tuple[float, float, float, float]:
    (x0, y0), (x1, y1) = outline.min(axis=0), outline.max(axis=0)
    return float(x0), float(y0), float(x1), float(y1)


def _inside(d, k: int, rect: tuple[float, float, float, float]) -> bool:  # type: ignore[no-untyped-def]
    return bool(
        rect[0] <= d.x[k] - d.w[k] / 2
        and d.x[k] + d.w[k] / 2 <= rect[2]
        and rect[1] <= d.y[k] - d.h[k] / 2
        and d.y[k] + d.h[k] / 2 <= rect[3]
    )


def test_open_if_and_loop_hold_their_titled_bodies(tmp_path: Path) -> None:
    graph = load(_model(tmp_path))
    h = Hierarchy(graph)
    groups = {graph.nodes[i].id for i in np.flatnonzero(h.is_group)}
    d = build_drawing(graph, groups)
    titles = d.frame_titles
    assert {"then_branch", "else_branch", "body"} <= set(titles)
    key = {k: i for i, k in enumerate(d.keys)}
    frame_of = {t: _rect(o) for t, (_g, o) in zip(titles, d.frames, strict=True)}
    for title, members in (
        ("then_branch", ("Relu", "Mul")),
        ("else_branch", ("Neg", "Add")),
        ("body", ("Add", "Identity")),
    ):
        inside = [
            k for k in range(d.count) if _inside(d, k, frame_of[title]) and d.kind[k] != KIND_TENSOR
        ]
        assert sorted(d.title[k] for k in inside) == sorted(members), title
    # the If box heads its frame (open: drawn as an operator, not as a closed group)
    pick = key[next(g for g in groups if "pick" in g)]
    assert d.kind[pick] != KIND_GROUP and d.title[pick] == "If"
    pick_frame = next(_rect(o) for g, o in d.frames if graph.nodes[g].id == d.keys[pick])
    assert _inside(d, pick, pick_frame)
    assert d.y[pick] - d.h[pick] / 2 < pick_frame[1] + 40  # at its top
    # the Loop body's own inputs are inside its body frame
    for name in ("i", "c", "acc"):
        k = next(k for k, t in enumerate(d.title) if t == name and d.kind[k] == KIND_TENSOR)
        assert _inside(d, k, frame_of["body"]), name


def test_a_closed_loop_hides_its_bodys_inputs(tmp_path: Path) -> None:
    graph = load(_model(tmp_path))
    d = build_drawing(graph, set())
    tensors = {d.title[k] for k in range(d.count) if d.kind[k] == KIND_TENSOR}
    assert tensors == {"x", "out"}
