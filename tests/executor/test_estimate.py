"""The memory budget of a run: the estimate before allocation, and the guard while running."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.executor.big_graphs import lightnet_file
from tests.executor.test_runtime import _t, relu_chain
from xocview.errors import RunError
from xocview.executor import budget, run, starting_values
from xocview.executor.estimate import estimate_peak, item_bytes
from xocview.executor.plan import make_plan
from xocview.formats import registry
from xocview.model import Graph, Node

BILLION = 10**9


@pytest.fixture
def two_gigabytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine with 2 GB available, whatever this one has: the default budget is 1 GB."""
    monkeypatch.setattr(budget, "available_memory", lambda: 2 * 2**30)


@pytest.fixture
def no_random_fill(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    """Records the shape of every random tensor the runtime starts to make."""
    made: list[tuple[int, ...]] = []
    real = starting_values.random_value

    def spy(tensor: Any, shape: tuple[int, ...], dtype: Any, rng: Any) -> np.ndarray:
        made.append(shape)
        return real(tensor, shape, dtype, rng)

    monkeypatch.setattr(starting_values, "random_value", spy)
    return made


def big_weight_graph() -> Graph:
    """x + w where the file declares w with 10^9 elements and gives no values."""
    tensors = [_t("x", "input", [2, 3]), _t("big", "weight", [BILLION]), _t("y", "output", [2, 3])]
    return Graph("g", "g", tensors, [Node("add", "Add", [0, 1], [2])], [0], [2])


def test_a_declared_billion_element_weight_is_refused_before_any_allocation(
    two_gigabytes: None, no_random_fill: list[tuple[int, ...]]
) -> None:
    start = time.perf_counter()
    with pytest.raises(RunError) as info:
        run(big_weight_graph())
    assert time.perf_counter() - start < 1
    message = str(info.value)
    assert "the run needs about 3.7 GB for its tensors, over the memory budget of 1.0 GB" in message
    assert "largest: weight 'big' [1000000000] float32 3.7 GB" in message
    assert "--max-memory SIZE" in message and "max_memory=bytes" in message
    assert no_random_fill == []


def test_the_largest_tensors_are_named_biggest_first() -> None:
    g = big_weight_graph()
    g.tensors[0].shape = [1000, 1000]
    g.tensors[2].shape = [1000, 1000]
    with pytest.raises(RunError) as info:
        run(g, max_memory=2**30)
    largest = str(info.value).split("largest: ")[1]
    assert largest.startswith("weight 'big' [1000000000] float32 3.7 GB, input 'x' [1000,1000]")


def test_max_memory_in_bytes_refuses_a_small_model_and_zero_lifts_the_limit() -> None:
    with pytest.raises(RunError, match=r"over the memory budget of 1\.0 MB"):
        run(relu_chain(3, [256, 1024]), max_memory=2**20)
    assert run(relu_chain(3, [256, 1024]), max_memory=0).outputs["y"].shape == (256, 1024)


def test_a_normal_model_runs_under_the_default_budget(two_gigabytes: None) -> None:
    assert run(relu_chain(3, [256, 1024])).outputs["y"].shape == (256, 1024)


def test_the_estimate_is_the_measured_peak_where_shapes_are_known() -> None:
    g = relu_chain(20, [256, 1024])
    plan = make_plan(g)
    estimate = estimate_peak(g, plan, {}, {}, {}, 1)
    assert estimate.unknown == 0
    assert estimate.peak == run(g).peak_bytes


def test_a_symbolic_dimension_is_sized_as_the_user_asks() -> None:
    g = relu_chain(2, [-1, 1000])
    g.tensors[0].metadata["shape_symbols"] = ["batch", None]
    with pytest.raises(RunError, match=r"input 'x' \[1000000,1000\] float32 3\.7 GB"):
        run(g, symbols={"batch": 10**6}, max_memory=2**30)
    with pytest.raises(RunError, match=r"input 'x' \[2000000,1000\]"):
        run(g, shapes={"x": [2 * 10**6, 1000]}, max_memory=2**30)


def test_unknown_activation_shapes_are_counted_as_unknown() -> None:
    g = relu_chain(3)
    g.tensors[2].metadata["rank_unknown"] = True
    # (fused, Add -> Relu never makes t1: nothing to estimate)
    estimate = estimate_peak(g, make_plan(g, fuse=False), {}, {}, {}, 1)
    assert estimate.unknown == 1 and estimate.sizes[2] == 0


def test_a_kernel_output_over_the_budget_stops_the_run_at_its_node() -> None:
    """Expand's output size is known only when it runs: it is guarded as it is made."""
    tensors = [
        _t("x", "input", [1, 1]),
        _t("shape", "weight", [2], "int64"),
        _t("big", shape=[-1, -1]),
        _t("y", "output", [-1, -1]),
    ]
    tensors[1].data = np.array([1000, 1000], dtype=np.int64)
    nodes = [Node("expand", "Expand", [0, 1], [2]), Node("relu", "Relu", [2], [3])]
    g = Graph("g", "g", tensors, nodes, [0], [3])
    with pytest.raises(RunError) as info:
        run(g, max_memory=2**20)
    assert info.value.node_id == "expand"
    assert "node 'expand' (Expand): its outputs took the live tensors to 3.8 MB, over the " in str(
        info.value
    )
    assert run(g, max_memory=0).outputs["y"].shape == (1000, 1000)


def test_a_weight_whose_shape_the_run_infers_is_held_to_the_budget(
    no_random_fill: list[tuple[int, ...]],
) -> None:
    """MXNet weights have no shape in the file; Gemm's follows from its input and attribute."""
    tensors = [
        _t("x", "input", [1, 4096]),
        _t("w", "weight", [], rank_unknown=True),
        _t("y", "output", [], rank_unknown=True),
    ]
    node = Node("fc", "Gemm", [0, 1], [2], {}, {"attrs": {"num_hidden": 65536}})
    g = Graph("g", "g", tensors, [node], [0], [2])
    with pytest.raises(RunError, match=r"node 'fc' \(Gemm\): weight 'w' of shape \[4096, 65536\]"):
        run(g, max_memory=2**20)
    assert no_random_fill == [(1, 4096)]


def test_a_lightnet_file_with_a_billion_element_weight_is_refused(
    tmp_path: Path, two_gigabytes: None
) -> None:
    g = registry.load(lightnet_file(tmp_path, [BILLION]))
    with pytest.raises(RunError, match=r"largest: weight 'big' \[1000000000\] float32 3\.7 GB"):
        run(g)


def test_an_xoc_file_with_a_billion_element_weight_is_refused(
    tmp_path: Path, two_gigabytes: None
) -> None:
    doc = json.loads((Path(__file__).parents[2] / "sample_graphs/simple_model.json").read_text())
    doc["tensors"][1]["shape"] = [BILLION, 3, 3, 3]
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(RunError, match=r"weight 'tensor_1' \[1000000000,3,3,3\] float32 100\.6 GB"):
        run(registry.load(path))


def test_an_onnx_input_of_a_billion_elements_is_refused(
    tmp_path: Path, two_gigabytes: None
) -> None:
    x = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [BILLION])
    y = helper.make_tensor_value_info("y", TensorProto.DOUBLE, [BILLION])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    path = tmp_path / "big.onnx"
    onnx.save(helper.make_model(graph), path)
    with pytest.raises(RunError, match=r"input 'x' \[1000000000\] double 7\.5 GB"):
        run(registry.load(path))


def test_element_sizes_follow_the_executor() -> None:
    assert item_bytes("float32") == 4 and item_bytes("double") == 8 and item_bytes("bool") == 1
    assert item_bytes("undefined") == 4  # runs as float32
    assert item_bytes("string") == 8  # object pointers
    assert item_bytes("int4") == 1 and item_bytes("nonsense") == 4


def test_a_thousand_large_dims_beside_a_zero_give_a_finite_refusal() -> None:
    """Sizes past float range are capped, so the live sum never meets inf - inf (NaN)."""
    tensors = [
        _t("x", "input", [2] * 40),
        _t("a", "activation", [64] + [32] * 1000),
        _t("z", "activation", [0] + [32] * 1000),
        _t("y", "output", [2] * 40),
    ]
    nodes = [
        Node("r1", "Relu", [0], [1]),
        Node("r2", "Relu", [1], [2]),
        Node("r3", "Relu", [0], [3]),
    ]
    g = Graph("g", "g", tensors, nodes, [0], [3])
    with pytest.raises(RunError, match=r"needs about 1e\+30 B .* over the memory budget"):
        run(g, max_memory=2**30)
