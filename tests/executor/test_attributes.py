"""Attributes are checked against their ONNX types before a kernel sees them."""

from __future__ import annotations

from typing import Any

import pytest

from xocview.errors import RunError
from xocview.executor import run
from xocview.executor.attributes import check_attribute_types
from xocview.model import Graph, Node, Tensor


@pytest.mark.parametrize(
    ("op", "attrs", "message"),
    [
        ("MaxPool", {"kernel_shape": [2, 2], "strides": {"k": 1}}, "expected a list of integers"),
        ("MaxPool", {"kernel_shape": [2, 2], "strides": False}, "expected a list of integers"),
        ("Conv", {"group": "two"}, "attribute 'group' is 'two'; expected an integer"),
        ("LeakyRelu", {"alpha": [1]}, "expected a number"),
        ("Conv", {"auto_pad": 3}, "expected a string"),
        ("Conv", {"group": 10**30}, "expected an integer of int64 range"),
        ("MaxPool", {"kernel_shape": [2, 2**70]}, "expected a list of integers of int64 range"),
    ],
)
def test_a_wrong_type_names_the_attribute_and_what_was_expected(
    op: str, attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        check_attribute_types(Node("n", op, [0], [1], attrs))


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("MaxPool", {"kernel_shape": [2, 2], "strides": [1, 1], "pads": [0, 0, 0, 0]}),
        ("LeakyRelu", {"alpha": 1}),  # an integer is a number
        ("Gemm", {"alpha": 0.5, "transB": 1}),
        ("Frobnicate", {"anything": {"goes": 1}}),  # not an ONNX operator: the kernel decides
    ],
)
def test_values_of_the_right_type_pass(op: str, attrs: dict[str, Any]) -> None:
    check_attribute_types(Node("n", op, [0], [1], attrs))


def test_a_run_stops_at_the_node_with_the_reason() -> None:
    tensors = [
        Tensor("x", "input", [1, 1, 4, 4], "float32"),
        Tensor("y", "output", [1, 1, 2, 2], "float32"),
    ]
    pool = Node("pool", "MaxPool", [0], [1], {"kernel_shape": [2, 2], "strides": {"k": 1}})
    graph = Graph("g", "g", tensors, [pool], [0], [1])
    with pytest.raises(RunError, match=r"'pool'.*attribute 'strides' is \{'k': 1\}; expected"):
        run(graph)


def _one_node_graph(node: Node, n_in: int = 1) -> Graph:
    tensors = [Tensor(f"x{k}", "input", [2, 3], "float32") for k in range(n_in)]
    tensors.append(Tensor("y", "output", [2, 3], "float32"))
    return Graph("g", "g", tensors, [node], list(range(n_in)), [n_in])


def test_an_attribute_the_kernel_does_not_take_is_refused_by_name() -> None:
    node = Node("c", "LeakyRelu", [0], [1], {"alpha": 0.1, "alphx": 2})
    with pytest.raises(RunError, match=r"'c'.*attribute 'alphx' is not one op 'LeakyRelu' takes"):
        run(_one_node_graph(node))


def test_a_required_input_left_out_is_refused_not_passed_as_none() -> None:
    """An empty input name (omitted_inputs) where the op needs a value."""
    node = Node("cat", "Concat", [0, 1], [2], {"axis": 0}, {"omitted_inputs": [1]})
    graph = _one_node_graph(node, n_in=2)
    graph.nodes[0].inputs = [0]
    with pytest.raises(RunError, match=r"'cat'.*input 1 of op 'Concat' is required"):
        run(graph)


def test_a_missing_required_attribute_is_named() -> None:
    node = Node("c", "Cast", [0], [1], {})
    with pytest.raises(RunError, match=r"'c'.*op 'Cast' needs attribute 'to'; it is missing"):
        run(_one_node_graph(node))
