"""The node loop: values, random feeds, symbols, frees, errors, cancel, progress, groups."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xocview.errors import RunError
from xocview.executor import RunResult, run
from xocview.model import Graph, Node, Tensor


def _t(
    tid: str,
    kind: str = "activation",
    shape: list[int] | None = None,
    dtype: str = "float32",
    **meta: Any,
) -> Tensor:
    return Tensor(tid, kind, [2, 3] if shape is None else shape, dtype, dict(meta))


def relu_chain(n: int, shape: list[int] | None = None) -> Graph:
    """x -> Add(w) -> Relu -> ... (n nodes) -> y."""
    shape = shape or [2, 3]
    tensors = [_t("x", "input", shape), _t("w", "weight", shape[-1:])]
    tensors += [_t(f"t{i}", shape=shape) for i in range(1, n)] + [_t("y", "output", shape)]
    nodes = [Node("add", "Add", [0, 1], [2])]
    nodes += [Node(f"relu{i}", "Relu", [i + 1], [i + 2]) for i in range(1, n)]
    return Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1])


def test_outputs_equal_numpy_and_every_node_is_timed() -> None:
    g = relu_chain(3)
    w = np.array([1.0, -2.0, 0.5], dtype=np.float32)
    g.tensors[1].data = w
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
    r = run(g, {"x": x})
    np.testing.assert_array_equal(r.outputs["y"], np.maximum(x + w, 0))
    assert set(r.node_times) == {"add", "relu1", "relu2"}
    assert all(t >= 0 for t in r.node_times.values())
    assert r.op_types["add"] == "Add"
    assert r.time_by_op().keys() == {"Add", "Relu"}


def test_random_inputs_follow_the_seed() -> None:
    a = run(relu_chain(2), seed=1).outputs["y"]
    b = run(relu_chain(2), seed=1).outputs["y"]
    c = run(relu_chain(2), seed=2).outputs["y"]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert a.dtype == np.float32 and a.shape == (2, 3)


def test_symbolic_dimension_takes_the_chosen_size() -> None:
    g = relu_chain(2, [-1, 3])
    g.tensors[0].metadata["shape_symbols"] = ["batch", None]
    assert run(g, symbols={"batch": 5}).outputs["y"].shape == (5, 3)
    assert run(g).outputs["y"].shape == (1, 3)
    assert run(g, symbol_default=4).outputs["y"].shape == (4, 3)


def test_npy_feed_and_shape_override(tmp_path: Path) -> None:
    x = np.ones((4, 3), dtype=np.float64)
    np.save(tmp_path / "x.npy", x)
    g = relu_chain(2, [-1, 3])
    r = run(g, {"x": tmp_path / "x.npy"})
    assert r.outputs["y"].shape == (4, 3) and r.outputs["y"].dtype == np.float32
    assert run(relu_chain(2, [-1, 3]), shapes={"x": [7, 3]}).outputs["y"].shape == (7, 3)


def test_a_feed_of_the_wrong_shape_is_refused() -> None:
    with pytest.raises(RunError, match=r"input 'x': given shape \[3, 3\], declared \[2, 3\]"):
        run(relu_chain(2), {"x": np.zeros((3, 3), np.float32)})
    with pytest.raises(RunError, match="no tensor named 'nope'"):
        run(relu_chain(2), {"nope": np.zeros(3)})


def test_intermediates_are_freed_after_their_last_reader() -> None:
    shape = [256, 1024]  # 1 MiB per float32 tensor
    r = run(relu_chain(20, shape))
    one = 256 * 1024 * 4
    # input, output, one live intermediate and its successor at a time: far below 20 tensors
    assert one * 2 <= r.peak_bytes <= one * 4 + 4096
    assert r.weight_bytes == 1024 * 4


def test_views_are_counted_once() -> None:
    tensors = [
        _t("x", "input", [64, 1024]),
        _t("a", shape=[64, 1024]),
        _t("y", "output", [1024, 64]),
    ]
    nodes = [Node("id", "Identity", [0], [1]), Node("tr", "Transpose", [1], [2])]
    r = run(Graph("g", "g", tensors, nodes, [0], [2]))
    assert r.peak_bytes == 64 * 1024 * 4


def test_unsupported_op_stops_with_the_node_op_and_shapes_keeping_timings() -> None:
    g = relu_chain(3)
    g.nodes[2].op_type = "FancyOp"
    with pytest.raises(RunError) as info:
        run(g)
    e = info.value
    assert e.node_id == "relu2" and e.op_type == "FancyOp"
    assert "node 'relu2' (FancyOp): no kernel for op 'FancyOp'" in str(e)
    assert "inputs: float32[2,3]" in str(e)
    assert isinstance(e.partial, RunResult) and set(e.partial.node_times) == {"add", "relu1"}


def test_shape_mismatch_names_the_shapes() -> None:
    g = relu_chain(2)
    g.tensors[1].shape = [4]
    with pytest.raises(
        RunError, match=r"node 'add' \(Add\): .*inputs: float32\[2,3\], float32\[4\]"
    ):
        run(g)


def test_cancel_between_nodes_returns_what_was_measured() -> None:
    seen: list[str] = []

    def progress(done: int, total: int, node_id: str, seconds: float) -> None:
        seen.append(node_id)

    r = run(relu_chain(5), on_progress=progress, cancel=lambda: len(seen) >= 2, fuse=False)
    assert r.cancelled and list(r.node_times) == ["add", "relu1"]


def test_progress_counts_every_node_of_every_pass() -> None:
    calls: list[tuple[int, int]] = []
    run(
        relu_chain(3),
        repeat=2,
        warmup=1,
        on_progress=lambda d, t, n, s: calls.append((d, t)),
        fuse=False,  # fused, Add -> relu1 is one step: 2 per pass
    )
    assert calls == [(k, 9) for k in range(1, 10)]


def test_groups_are_not_run_their_leaves_are() -> None:
    g = relu_chain(3)
    g.nodes.append(Node("block", "Block", [], [], None, {"children_ids": ["relu1", "relu2"]}))
    for n in g.nodes[1:3]:
        n.metadata["parent_id"] = "block"
    g.invalidate()
    assert set(run(g).node_times) == {"add", "relu1", "relu2"}


def test_a_graph_without_outputs_reports_its_unread_tensors() -> None:
    g = relu_chain(2)
    g.outputs = []
    g.tensors[-1].kind = "activation"
    assert list(run(g).outputs) == ["y"]


@pytest.mark.parametrize("fuse", [True, False])
def test_declared_shapes_that_disagree_become_warnings(fuse: bool) -> None:
    g = relu_chain(3)
    g.tensors[2].shape = [2, 4]  # t1, made by add (inside the fused Add -> Relu when fused)
    g.tensors[3].shape = [2, 5]  # t2, made by relu1, the fused step's output
    r = run(g, fuse=fuse)
    assert r.warnings == [
        "node 'relu1' (Relu): output 't2' has shape [2, 3], declared [2, 5]",
        "node 'add' (Add): output 't1' has shape [2, 3], declared [2, 4]",
    ] or r.warnings == [
        "node 'add' (Add): output 't1' has shape [2, 3], declared [2, 4]",
        "node 'relu1' (Relu): output 't2' has shape [2, 3], declared [2, 5]",
    ]
    assert (r.fused == {"add": ["relu1"]}) == fuse


def test_bad_repeat_is_refused() -> None:
    with pytest.raises(RunError, match="repeat must be >= 1"):
        run(relu_chain(2), repeat=0)


def test_a_weight_read_through_cast_and_transpose_is_held_once_after_folding() -> None:
    """An LLM's half [out, in] matrix reaches its MatMul through Cast and Transpose: once
    folded, only the float32 [in, out] form stays, and the estimate agrees with the run."""
    from xocview.executor.estimate import estimate_peak
    from xocview.executor.plan import make_plan

    w = np.random.default_rng(0).standard_normal((64, 32)).astype(np.float16)
    tensors = [
        _t("x", "input", [4, 32]),
        _t("w", "weight", [64, 32], "float16"),
        _t("w32", shape=[64, 32]),
        _t("wt", shape=[32, 64]),
        _t("y", "output", [4, 64]),
    ]
    tensors[1].data = w
    nodes = [
        Node("cast", "Cast", [1], [2], {"to": 1}),
        Node("transpose", "Transpose", [2], [3], {"perm": [1, 0]}),
        Node("matmul", "MatMul", [0, 3], [4]),
    ]
    g = Graph("g", "g", tensors, nodes, [0], [4])
    x = np.ones((4, 32), np.float32)
    r = run(g, {"x": x}, repeat=2)
    np.testing.assert_allclose(r.outputs["y"], x @ w.astype(np.float32).T, rtol=1e-6)
    assert r.folded == ["cast", "transpose"]
    assert r.weight_bytes == 32 * 64 * 4  # the half and the untransposed copy are gone
    live = 4 * 32 * 4 + 32 * 64 * 4 + 4 * 64 * 4
    assert r.peak_bytes < 64 * 32 * (2 + 4 + 4)  # never all three forms at once
    estimate = estimate_peak(g, make_plan(g), {}, {}, {}, 1)
    assert live <= estimate.peak <= 64 * 32 * (2 + 4 + 4)


def test_nodes_reading_only_weights_are_computed_once_before_timing() -> None:
    """A weight made by ConstantOfShape (the ONNX light models' way) is not timed per pass."""
    tensors = [
        _t("x", "input"),
        _t("shape", "weight", [2], "int64"),
        _t("w", shape=[2, 3]),
        _t("y", "output"),
    ]
    tensors[1].data = np.array([2, 3], dtype=np.int64)
    fill = np.array([0.5], dtype=np.float32)
    nodes = [
        Node(
            "make_w",
            "ConstantOfShape",
            [1],
            [2],
            {"value": {"tensor": {"dtype": "float32", "shape": [1], "values": fill.tolist()}}},
        ),
        Node("add", "Add", [0, 2], [3]),
    ]
    g = Graph("g", "g", tensors, nodes, [0], [3])
    x = np.ones((2, 3), np.float32)
    r = run(g, {"x": x}, repeat=3)
    np.testing.assert_array_equal(r.outputs["y"], x + 0.5)
    assert r.folded == ["make_w"] and list(r.node_times) == ["add"]
    assert r.weight_bytes == 6 * 4  # the shape only make_w read went once it had run
    timed_all = run(g, {"x": x}, fold_constants=False)
    assert timed_all.folded == [] and set(timed_all.node_times) == {"make_w", "add"}


def test_outputs_nothing_reads_may_be_left_out_by_a_kernel() -> None:
    """MXNet's BatchNorm lists its batch statistics as outputs; inference gives Y only."""
    tensors = [_t("x", "input", [1, 2, 3]), *(_t(n, "weight", [2]) for n in "sbmv")]
    tensors += [_t("y", "output", [1, 2, 3]), _t("mean", shape=[2]), _t("var", shape=[2])]
    g = Graph(
        "g", "g", tensors, [Node("bn", "BatchNormalization", [0, 1, 2, 3, 4], [5, 6, 7])], [0], [5]
    )
    r = run(g)
    assert r.outputs["y"].shape == (1, 2, 3)
    assert r.warnings == [
        "node 'bn' (BatchNormalization): gives 1 of its 3 outputs; the others are read by "
        "nothing and stay empty"
    ]
    g.nodes.append(Node("use", "Relu", [6], [8]))
    g.tensors.append(_t("z", "output", [2]))
    g.outputs.append(8)
    g.invalidate()
    with pytest.raises(RunError, match="the kernel gave 1 outputs, the node has 3"):
        run(g)


def test_shape_weights_without_values_follow_the_declared_output() -> None:
    """XOC files keep no weight values, not even Reshape's target shape."""
    tensors = [
        _t("x", "input", [1, 4, 2, 2]),
        _t("axes", "weight", [2], "int64"),
        _t("m", shape=[1, 4]),
        _t("target", "weight", [2], "int64"),
        _t("y", "output", [2, 2]),
    ]
    nodes = [
        Node("mean", "ReduceMean", [0, 1], [2], {"keepdims": 0}),
        Node("view", "Reshape", [2, 3], [4]),
    ]
    g = Graph(
        "g", "g", tensors, nodes, [0], [4], {"opset_import": [{"domain": "ai.onnx", "version": 18}]}
    )
    x = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
    y = run(g, {"x": x}).outputs["y"]
    np.testing.assert_allclose(y, x.mean(axis=(2, 3)).reshape(2, 2))


def test_every_tensor_made_or_fed_is_measured() -> None:
    g = relu_chain(3)
    for t in g.tensors[2:]:  # what a file without shapes gives: activations of unknown rank
        t.shape, t.dtype, t.metadata = [], "undefined", {"rank_unknown": True}
    r = run(g, {"x": np.zeros((2, 3), np.float32)})
    assert r.shapes == {
        "x": ([2, 3], "float32"),
        "w": ([3], "float32"),
        "t1": ([2, 3], "float32"),
        "t2": ([2, 3], "float32"),
        "y": ([2, 3], "float32"),
    }
