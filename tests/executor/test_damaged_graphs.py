"""Graphs that load but are damaged end in a located RunError, never an internal error."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.executor.test_runtime import _t, relu_chain
from xocview.errors import RunError
from xocview.executor import run
from xocview.executor.plan import make_plan
from xocview.executor.registry import KERNELS, Kernel
from xocview.executor.steps import _positions
from xocview.formats import registry
from xocview.model import Graph, Node


def test_weight_values_of_another_shape_than_declared_are_refused() -> None:
    g = relu_chain(2)
    g.tensors[1].data = np.zeros((2, 2), np.float32)
    with pytest.raises(
        RunError, match=r"weight 'w': its values have shape \[2, 2\], declared \[3\]"
    ):
        run(g)


def test_weight_values_that_cannot_be_read_are_named() -> None:
    def broken() -> np.ndarray:
        return np.frombuffer(b"\x00" * 5, dtype=np.float32)  # 5 bytes: not whole floats

    g = relu_chain(2)
    g.tensors[1].data = broken
    with pytest.raises(RunError, match=r"weight 'w': cannot read its values \(buffer size must"):
        run(g)


def test_a_negative_shape_given_for_an_input_is_refused_before_allocation() -> None:
    with pytest.raises(RunError, match=r"input 'x': shape \[-3, 3\] is negative"):
        run(relu_chain(2, [-1, 3]), shapes={"x": [-3, 3]})


def test_a_dtype_numpy_lacks_runs_as_its_ml_dtypes_type() -> None:
    g = relu_chain(2)
    g.tensors[0].dtype = "bfloat16"
    out = next(iter(run(g).outputs.values()))
    assert out.dtype.name == "bfloat16"


def test_a_node_with_too_few_inputs_names_what_the_op_takes() -> None:
    g = relu_chain(3)
    g.nodes[1].inputs = []
    g.invalidate()
    with pytest.raises(
        RunError, match=r"node 'relu1' \(Relu\): op 'Relu' takes 1 inputs, the node"
    ):
        run(g)


@pytest.mark.parametrize(
    "spec",
    [
        5,
        {"dtype": "float32", "shape": [None], "values": [1.0]},
        {"dtype": "float32", "shape": [2], "values": [[1.0], 2.0]},
        {"dtype": "complex64", "shape": [1], "values": [1.0]},
        {"dtype": "float32", "shape": "ab", "values": "xy"},
    ],
)
def test_a_damaged_tensor_attribute_names_the_node_and_attribute(spec: Any) -> None:
    g = relu_chain(2)
    g.nodes[1].op_type = "ConstantOfShape"
    g.nodes[1].attributes = {"value": {"tensor": spec}}
    with pytest.raises(RunError, match=r"node 'relu1' \(ConstantOfShape\): attribute 'value'"):
        run(g)


@pytest.mark.parametrize("omitted", [[5], "x", [0, 1, 2], [-1], [True]])
def test_damaged_omitted_input_lists_keep_every_tensor(omitted: Any) -> None:
    args = _positions([7, 8], omitted)
    assert [a for a in args if a is not None] == [7, 8]


def test_malformed_omitted_inputs_metadata_does_not_break_the_plan() -> None:
    g = relu_chain(2)
    g.nodes[0].metadata["omitted_inputs"] = [9]
    assert make_plan(g).steps[0].inputs == [0, 1]


@pytest.mark.parametrize("group", [0, "x", [1, "a"], None])
def test_bad_attributes_while_inferring_a_weight_shape_name_the_node(group: Any) -> None:
    tensors = [
        _t("x", "input", [1, 4, 8, 8]),
        _t("w", "weight", [], rank_unknown=True),
        _t("y", "output", [1, 2, 6, 6]),
    ]
    node = Node("conv", "Conv", [0, 1], [2], {"kernel_shape": [3, 3], "group": group})
    g = Graph("g", "g", tensors, [node], [0], [2])
    with pytest.raises(RunError, match=r"node 'conv' \(Conv\): "):
        run(g)


@pytest.mark.parametrize(
    ("error", "problem"),
    [
        (MemoryError("Unable to allocate"), "not enough memory (Unable to allocate)"),
        (ValueError("operands could not be broadcast"), "operands could not be broadcast"),
        (IndexError("tuple index out of range"), "the kernel failed on these inputs (tuple"),
        (ZeroDivisionError("division by zero"), "the kernel failed on these inputs (division"),
    ],
)
def test_any_kernel_failure_becomes_a_run_error_with_the_node(
    monkeypatch: pytest.MonkeyPatch, error: Exception, problem: str
) -> None:
    def failing(x: np.ndarray) -> np.ndarray:
        raise error

    monkeypatch.setitem(KERNELS, "Relu", [Kernel("Relu", 1, failing, False)])
    with pytest.raises(RunError) as info:
        run(relu_chain(3), fuse=False)  # fused, Add -> relu1 would not call the Relu kernel
    assert info.value.node_id == "relu1"
    assert f"node 'relu1' (Relu): {problem}" in str(info.value)
    assert type(error).__name__ not in str(info.value)


def test_a_kernel_failing_on_a_later_pass_still_names_the_node(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[int] = []

    def flaky(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        if len(calls) > 2:
            raise MemoryError("Unable to allocate")
        return x

    monkeypatch.setitem(KERNELS, "Relu", [Kernel("Relu", 1, flaky, False)])
    with pytest.raises(RunError, match=r"node 'relu\d' \(Relu\): not enough memory"):
        run(relu_chain(3), repeat=2, fuse=False)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ([[1.0, 2.0], [3.0]], "the value given is not an array"),
        (np.array(["a"] * 6).reshape(2, 3), "given values of type <U1 do not convert to float32"),
    ],
)
def test_feeds_that_are_not_numbers_are_refused(value: Any, problem: str) -> None:
    with pytest.raises(RunError, match=f"input 'x': {problem}"):
        run(relu_chain(2), {"x": value})


def test_a_feed_file_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "x.npy"
    os.mkfifo(fifo)  # reading it would block for ever
    with pytest.raises(RunError, match=r"input 'x' must be a regular \.npy file"):
        run(relu_chain(2), {"x": fifo})
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    with pytest.raises(RunError, match=r"cannot read input 'x' as \.npy"):
        run(relu_chain(2), {"x": empty})


def test_sample_graphs_with_damaged_shapes_end_in_run_errors() -> None:
    """The throwaway fuzz's findings, one of each: huge, negative and unknown dims."""
    for shape in ([10**12, 3, 3, 3], [-7, 3, 3, 3], [2**62]):
        g = registry.load(Path(__file__).parents[2] / "sample_graphs" / "simple_model.json")
        g.tensors[1].shape = shape
        with pytest.raises(RunError):
            run(g)


def test_a_negative_dimension_other_than_symbolic_is_refused() -> None:
    g = relu_chain(2)
    g.tensors[0].shape = [-7, 3]
    with pytest.raises(
        RunError, match=r"input 'x': dimension 0 of shape \[-7, 3\] is -7; expected"
    ):
        run(g)
