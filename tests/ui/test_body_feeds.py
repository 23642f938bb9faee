"""An open If/Loop/Scan body tied to the outer values that feed it: a captured outer value
reaches the body node that reads it, and a Loop's or Scan's inputs reach the body inputs they
bind, from the node that makes them."""

from __future__ import annotations

from pathlib import Path

import onnx
from onnx import TensorProto as T
from onnx import helper as oh

from xocview.formats import load
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import Drawing, build_drawing


def _save(path: Path, nodes: list[onnx.NodeProto], inits: list[onnx.TensorProto]) -> Path:
    graph = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [oh.make_tensor_value_info("out", T.FLOAT, [1, 4])],
        initializer=inits,
    )
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return path


def _open_all(path: Path) -> Drawing:
    graph = load(path)
    h = Hierarchy.of(graph)
    opened = {graph.nodes[i].id for i in range(len(graph.nodes)) if h.is_group[i]}
    return build_drawing(graph, opened)


def _item(d: Drawing, key: str) -> int:
    return d.keys.index(key)


def _edge(d: Drawing, a: str, b: str) -> list[int]:
    ia, ib = _item(d, a), _item(d, b)
    return [e for e in range(len(d.edges)) if d.edge_src[e] == ia and d.edge_dst[e] == ib]


def _reaches(d: Drawing, e: int, item: int) -> bool:
    """The edge's last point lies on the item's top border."""
    x, y = d.edges[e][-1]
    return abs(y - (d.y[item] - d.h[item] / 2)) < 1.0 and abs(x - d.x[item]) <= d.w[item] / 2


def test_an_if_body_reads_an_outer_value_by_an_edge_from_its_producer(tmp_path: Path) -> None:
    then_g = oh.make_graph(
        [oh.make_node("Mul", ["r", "r"], ["then_out"], name="then_mul")],
        "then",
        [],
        [oh.make_tensor_value_info("then_out", T.FLOAT, [1, 4])],
    )
    else_g = oh.make_graph(
        [oh.make_node("Neg", ["r"], ["else_out"], name="else_neg")],
        "else",
        [],
        [oh.make_tensor_value_info("else_out", T.FLOAT, [1, 4])],
    )
    nodes = [
        oh.make_node("Relu", ["x"], ["r"], name="relu"),
        oh.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
        oh.make_node("Greater", ["s", "zero"], ["cond"], name="gt"),
        oh.make_node("If", ["cond"], ["out"], then_branch=then_g, else_branch=else_g, name="pick"),
    ]
    d = _open_all(_save(tmp_path / "if.onnx", nodes, [oh.make_tensor("zero", T.FLOAT, [], [0])]))
    for reader in ("then_mul", "else_neg"):
        found = _edge(d, "relu", reader)
        assert found, f"no edge from the outer producer to {reader}"
        assert _reaches(d, found[0], _item(d, reader))


def test_a_loop_body_input_is_fed_by_the_value_bound_to_it(tmp_path: Path) -> None:
    body = oh.make_graph(
        [
            oh.make_node("Add", ["acc", "acc"], ["acc2"], name="body_add"),
            oh.make_node("Identity", ["c"], ["c2"], name="body_id"),
        ],
        "body",
        [
            oh.make_tensor_value_info("i", T.INT64, []),
            oh.make_tensor_value_info("c", T.BOOL, []),
            oh.make_tensor_value_info("acc", T.FLOAT, [1, 4]),
        ],
        [
            oh.make_tensor_value_info("c2", T.BOOL, []),
            oh.make_tensor_value_info("acc2", T.FLOAT, [1, 4]),
        ],
    )
    nodes = [
        oh.make_node("Relu", ["x"], ["r"], name="relu"),
        oh.make_node("Loop", ["n", "", "r"], ["out"], body=body, name="repeat"),
    ]
    inits = [oh.make_tensor("n", T.INT64, [], [2])]
    d = _open_all(_save(tmp_path / "loop.onnx", nodes, inits))
    fed = _edge(d, "relu", "acc")
    assert len(fed) == 1 and _reaches(d, fed[0], _item(d, "acc"))
    assert not _edge(d, "relu", "repeat"), "the value flows into the body, not into the box"
    # the trip count is folded into the Loop's box: the iteration number hangs from that box
    assert _edge(d, "repeat", "i")
    # no condition was given: the body's condition input has no edge in
    assert not any(d.edge_dst[e] == _item(d, "c") for e in range(len(d.edges)))


def test_a_scan_binds_states_and_slices_in_order(tmp_path: Path) -> None:
    body = oh.make_graph(
        [oh.make_node("Add", ["st", "sl"], ["st2"], name="body_add")],
        "body",
        [
            oh.make_tensor_value_info("st", T.FLOAT, [4]),
            oh.make_tensor_value_info("sl", T.FLOAT, [4]),
        ],
        [oh.make_tensor_value_info("st2", T.FLOAT, [4])],
    )
    nodes = [
        oh.make_node("Reshape", ["x", "shape"], ["xs"], name="flat"),
        oh.make_node("Relu", ["xs"], ["seq"], name="relu"),
        oh.make_node("Scan", ["init", "seq"], ["out"], body=body, num_scan_inputs=1, name="scan"),
    ]
    inits = [
        oh.make_tensor("shape", T.INT64, [2], [1, 4]),
        oh.make_tensor("init", T.FLOAT, [4], [0] * 4),
    ]
    graph = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info("x", T.FLOAT, [1, 4])],
        [oh.make_tensor_value_info("out", T.FLOAT, [4])],
        initializer=inits,
    )
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]), tmp_path / "s.onnx")
    d = _open_all(tmp_path / "s.onnx")
    assert _edge(d, "relu", "sl"), "the scanned sequence feeds the slice input"
    assert _edge(d, "scan", "st"), "the folded initial state hangs from the Scan's box"
    assert not _edge(d, "relu", "st")
