"""If, Loop, Scan and sequences run as ONNX defines them, nested and with outer-scope
references, checked against onnxruntime on whole models loaded from files; body nodes are timed
and their times count toward their holder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.errors import RunError
from xocview.executor import run
from xocview.formats import load
from xocview.model import Hierarchy
from xocview.model.analyses.profile import subgraph_holders, subtree_sums

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the yardstick")

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def info(name: str, elem: int = F, shape: list[Any] | None = None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def const(name: str, value: Any, dtype: Any = np.float32) -> onnx.NodeProto:
    return helper.make_node(
        "Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, dtype))
    )


def save(
    tmp_path: Path,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    inits: list[onnx.TensorProto] | None = None,
    opset: int = 17,
) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def both(path: Path, feeds: dict[str, Any], **kwargs: Any) -> tuple[dict[str, Any], Any]:
    """Our outputs (and result) next to onnxruntime's, asserted equal."""
    result = run(load(path), feeds, **kwargs)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for name, want in zip(names, session.run(names, feeds), strict=True):
        got = result.outputs[name]
        if isinstance(want, list):
            assert len(got) == len(want), name
            for g, w in zip(got, want, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
        else:
            assert got.dtype == want.dtype and got.shape == want.shape, name
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    return result.outputs, result


def running_sum_loop(tmp_path: Path, with_cond: bool = True) -> Path:
    """acc_{i+1} = acc_i + x * i while i < M (and acc < limit); scan output: each acc."""
    body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["x", "fi"], ["step"]),  # x: an outer-scope tensor
            helper.make_node("Add", ["acc_in", "step"], ["acc_out"]),
            helper.make_node("ReduceSum", ["acc_out"], ["total"], keepdims=0),
            helper.make_node("Less", ["total", "limit"], ["go"]),  # limit: outer too
            helper.make_node("Identity", ["acc_out"], ["scan"]),
        ],
        "body",
        [info("i", I64, []), info("c", B, []), info("acc_in", F, [2])],
        [info("go", B, []), info("acc_out", F, [2]), info("scan", F, [2])],
    )
    loop = helper.make_node(
        "Loop", ["M", "cond" if with_cond else "", "acc0"], ["acc", "trace"], body=body
    )
    return save(
        tmp_path,
        [loop],
        [info("M", I64, []), info("cond", B, []), info("acc0", F, [2]), info("x", F, [2])]
        if with_cond
        else [info("M", I64, []), info("acc0", F, [2]), info("x", F, [2])],
        [info("acc", F, [2]), info("trace", F, [None, 2])],
        [numpy_helper.from_array(np.array(40.0, np.float32), "limit")],
    )


@pytest.mark.parametrize("trips", [0, 1, 3, 20])
def test_loop_carries_values_and_stacks_scan_outputs(tmp_path: Path, trips: int) -> None:
    feeds = {
        "M": np.array(trips, np.int64),
        "cond": np.array(True),
        "acc0": np.array([1.0, 2.0], np.float32),
        "x": np.array([0.5, 1.5], np.float32),
    }
    if trips == 0:  # nothing to stack: onnxruntime and we disagree on the empty scan's shape
        out, _ = run(load(running_sum_loop(tmp_path)), feeds).outputs, None
        np.testing.assert_array_equal(out["acc"], feeds["acc0"])
        assert out["trace"].size == 0
        return
    out, _ = both(running_sum_loop(tmp_path), feeds)
    assert out["trace"].shape[1] == 2


def test_loop_without_cond_runs_its_trip_count(tmp_path: Path) -> None:
    feeds = {
        "M": np.array(6, np.int64),
        "acc0": np.zeros(2, np.float32),
        "x": np.array([1.0, 100.0], np.float32),  # the body's condition turns false early
    }
    out, _ = both(running_sum_loop(tmp_path, with_cond=False), feeds)
    assert out["trace"].shape == (2, 2)  # the body's condition stopped it, as in onnxruntime


def test_if_inside_loop_with_outer_references_at_two_depths(tmp_path: Path) -> None:
    """Loop body: If (i is even) then acc + w else acc - w, where w is an outer weight read from
    inside the If's branches (two scopes up)."""
    then = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "w"], ["t"])], "then", [], [info("t", F, [3])]
    )
    other = helper.make_graph(
        [helper.make_node("Sub", ["acc_in", "w"], ["e"])], "else", [], [info("e", F, [3])]
    )
    body = helper.make_graph(
        [
            const("two", 2, np.int64),
            helper.make_node("Mod", ["i", "two"], ["r"]),
            const("zero", 0, np.int64),
            helper.make_node("Equal", ["r", "zero"], ["even"]),
            helper.make_node("If", ["even"], ["acc_out"], then_branch=then, else_branch=other),
            helper.make_node("Identity", ["c"], ["c_out"]),
        ],
        "body",
        [info("i", I64, []), info("c", B, []), info("acc_in", F, [3])],
        [info("c_out", B, []), info("acc_out", F, [3])],
    )
    w = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "w")
    path = save(
        tmp_path,
        [helper.make_node("Loop", ["M", "", "acc0"], ["acc"], body=body)],
        [info("M", I64, []), info("acc0", F, [3])],
        [info("acc", F, [3])],
        [w],
    )
    feeds = {"M": np.array(5, np.int64), "acc0": np.zeros(3, np.float32)}
    out, result = both(path, feeds)
    np.testing.assert_array_equal(out["acc"], [1.0, 2.0, 3.0])  # +w three times, -w twice
    branches = {k for k in result.node_times if result.op_types[k] in ("Add", "Sub")}
    assert len(branches) == 2  # both branches ran (in different iterations) and were timed


@pytest.mark.parametrize(
    ("in_axis", "in_dir", "out_axis", "out_dir"), [(0, 0, 0, 0), (1, 1, 1, 0), (-1, 0, 0, 1)]
)
def test_scan_slices_and_stacks_along_axes_and_directions(
    tmp_path: Path, in_axis: int, in_dir: int, out_axis: int, out_dir: int
) -> None:
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "row"], ["s_out"]),
            helper.make_node("Mul", ["s_out", "row"], ["y"]),
        ],
        "body",
        [info("s_in", F, [4]), info("row", F, [4])],
        [info("s_out", F, [4]), info("y", F, [4])],
    )
    scan = helper.make_node(
        "Scan",
        ["s0", "xs"],
        ["s", "ys"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[in_axis],
        scan_input_directions=[in_dir],
        scan_output_axes=[out_axis],
        scan_output_directions=[out_dir],
    )
    shape = [5, 4] if in_axis == 0 else [4, 5]
    path = save(
        tmp_path,
        [scan],
        [info("s0", F, [4]), info("xs", F, shape)],
        [info("s", F, [4]), info("ys", F, None)],
    )
    rng = np.random.default_rng(0)
    feeds = {"s0": np.zeros(4, np.float32), "xs": rng.standard_normal(shape).astype(np.float32)}
    both(path, feeds)


def test_sequences_flow_through_the_runtime(tmp_path: Path) -> None:
    """SplitToSequence -> SequenceInsert / Erase / At / Length -> ConcatFromSequence."""
    nodes = [
        helper.make_node("SplitToSequence", ["x"], ["seq"], axis=1),
        const("pos", 1, np.int64),
        helper.make_node("SequenceInsert", ["seq", "extra", "pos"], ["seq2"]),
        helper.make_node("SequenceErase", ["seq2"], ["seq3"]),
        helper.make_node("SequenceAt", ["seq3", "pos"], ["second"]),
        helper.make_node("SequenceLength", ["seq3"], ["n"]),
        helper.make_node("ConcatFromSequence", ["seq3"], ["joined"], axis=0, new_axis=1),
    ]
    path = save(
        tmp_path,
        nodes,
        [info("x", F, [3, 4]), info("extra", F, [3, 1])],
        [info("second", F, [3, 1]), info("n", I64, []), info("joined", F, None)],
    )
    rng = np.random.default_rng(1)
    feeds = {
        "x": rng.standard_normal((3, 4)).astype(np.float32),
        "extra": np.full((3, 1), 7.0, np.float32),
    }
    out, _ = both(path, feeds)
    assert int(out["n"]) == 4


def test_a_sequence_input_is_fed_as_a_list(tmp_path: Path) -> None:
    seq_type = helper.make_tensor_sequence_value_info("seq", F, None)
    path = save(
        tmp_path,
        [helper.make_node("ConcatFromSequence", ["seq"], ["y"], axis=0)],
        [seq_type],
        [info("y", F, None)],
    )
    parts = [np.ones((2, 3), np.float32), np.zeros((1, 3), np.float32)]
    out = run(load(path), {"seq": parts}).outputs["y"]
    np.testing.assert_array_equal(out, np.concatenate(parts))
    with pytest.raises(RunError, match="input 'seq' is a sequence; expected a list of arrays"):
        run(load(path), {"seq": np.ones(3, np.float32)})


def test_body_nodes_are_timed_over_every_iteration_and_sum_to_their_holder(tmp_path: Path) -> None:
    """A 40-step loop of a 64x64 MatMul: the body node's time covers all 40 calls, and the
    holder's subtree (its own share plus its body's) is what the loop took."""
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "w"], ["mm"], "body_matmul"),
            helper.make_node("Tanh", ["mm"], ["h_out"], "body_tanh"),
            helper.make_node("Identity", ["c"], ["c_out"], "body_cond"),
        ],
        "body",
        [info("i", I64, []), info("c", B, []), info("h_in", F, [64, 64])],
        [info("c_out", B, []), info("h_out", F, [64, 64])],
    )
    w = numpy_helper.from_array(
        (np.random.default_rng(2).standard_normal((64, 64)) / 8).astype(np.float32), "w"
    )

    def loop_of(trips: int, folder: Path) -> Path:
        folder.mkdir()
        return save(
            folder,
            [
                const("M", trips, np.int64),
                helper.make_node("Loop", ["M", "", "h0"], ["h"], "loop", body=body),
            ],
            [info("h0", F, [64, 64])],
            [info("h", F, [64, 64])],
            [w],
        )

    h0 = {"h0": np.ones((64, 64), np.float32)}
    one = run(load(loop_of(1, tmp_path / "one")), h0, repeat=5)
    many_graph = load(loop_of(40, tmp_path / "many"))
    many = run(many_graph, h0, repeat=5)
    assert {"loop", "body_matmul", "body_tanh", "body_cond"} <= set(many.node_times)
    assert many.node_times["body_matmul"] > 8 * one.node_times["body_matmul"]
    h = Hierarchy(many_graph)
    own = np.array([many.node_times.get(n.id, 0.0) for n in many_graph.nodes])
    sums = subtree_sums(own, h, subgraph_holders(many_graph, h))
    loop_total = sums[many_graph.index.node_position("loop")]
    assert loop_total == pytest.approx(sum(many.node_times.values()))
    # Per-node medians need not sum to the median pass on a loaded machine, so the bound is
    # loose; counting the body twice (in the holder's own time and in its body) would double it.
    assert loop_total <= many.total_time * 1.5


def test_a_failing_body_node_is_named(tmp_path: Path) -> None:
    then = helper.make_graph(
        [helper.make_node("Reshape", ["x", "bad"], ["t"], "t_reshape")],
        "then",
        [],
        [info("t", F, None)],
    )
    other = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["e"])], "else", [], [info("e", F, None)]
    )
    path = save(
        tmp_path,
        [helper.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other)],
        [info("c", B, []), info("x", F, [2, 3])],
        [info("y", F, None)],
        [numpy_helper.from_array(np.array([4, 4], np.int64), "bad")],
    )
    feeds = {"c": np.array(True), "x": np.ones((2, 3), np.float32)}
    with pytest.raises(RunError, match=r"node 't_reshape' \(Reshape\)"):
        run(load(path), feeds)


def test_a_loop_saved_as_xoc_and_reopened_runs_the_same(tmp_path: Path) -> None:
    """Bodies name their inputs and outputs in the graph attributes, which XOC keeps (XOC keeps
    no weight values: the limit is given)."""
    from xocview.formats import registry

    feeds = {
        "limit": np.array(40.0, np.float32),
        "M": np.array(4, np.int64),
        "cond": np.array(True),
        "acc0": np.array([1.0, 2.0], np.float32),
        "x": np.array([0.5, 1.5], np.float32),
    }
    graph = load(running_sum_loop(tmp_path))
    registry.save(graph, tmp_path / "loop.json")
    again = run(load(tmp_path / "loop.json"), feeds).outputs
    first = run(graph, feeds).outputs
    for name in ("acc", "trace"):
        np.testing.assert_array_equal(again[name], first[name])
