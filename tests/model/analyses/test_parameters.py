"""model/analyses/parameters.py: one parameter count for nodes and the whole graph."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import onnx
import pytest

from tests.model.conftest import graph, node, tensor
from xocview.formats import load
from xocview.model import Graph
from xocview.model.analyses.parameters import (
    graph_parameters,
    is_parameter,
    parameter_size,
    parameters,
)
from xocview.model.analyses.summary import summarize

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(LIGHT.glob("light_*.onnx"))


def one(ins: Sequence[Sequence[int]], kinds: Sequence[str], op: str = "Conv") -> Graph:
    tensors = [tensor(f"x{i}", kinds[i], s) for i, s in enumerate(ins)]
    tensors.append(tensor("y", "output", [1]))
    n = len(ins)
    return graph(tensors, [node("n", op, range(n), [n])], [0], [n])


def test_parameters_of_weights() -> None:
    g = one([[1, 64, 56, 56], [128, 16, 3, 3], [128]], ["input", "weight", "weight"])
    assert parameters(g, 0) == 128 * 16 * 9 + 128


def test_parameters_skip_unknown_shapes_activations_and_shapes() -> None:
    assert parameters(one([[1, 3, 8, 8], [16, 3, -1, 3]], ["input", "weight"]), 0) == 0
    assert parameters(one([[1, 10]], ["activation"], "Relu"), 0) == 0
    reshape = one([[2, 6], [2]], ["input", "weight"], "Reshape")
    reshape.tensors[1].dtype = "int64"
    assert parameters(reshape, 0) == 0


def test_a_weight_fed_twice_counts_once() -> None:
    g = graph(
        [tensor("w", "weight", [4, 4]), tensor("y", "output")], [node("m", "MatMul", [0, 0], [1])]
    )
    assert parameters(g, 0) == 16
    assert graph_parameters(g) == (16, 0)


def constant_of_shape_graph() -> Graph:
    """Light ONNX models ship their weights as ConstantOfShape outputs fed by int64 shapes."""
    tensors = [
        tensor("x", "input", [1, 3, 8, 8]),
        tensor("w_shape", "weight", [4]),
        tensor("w", "activation", [16, 3, 3, 3]),
        tensor("y", "output", [1, 16, 8, 8]),
        tensor("y2", "output", [1, 16, 8, 8]),
    ]
    tensors[1].dtype = "int64"
    nodes = [
        node("c", "ConstantOfShape", [1], [2]),
        node("conv", "Conv", [0, 2], [3]),
        node("conv2", "Conv", [0, 2], [4]),  # shares the weight
    ]
    return graph(tensors, nodes, [0], [3, 4])


def test_constant_outputs_are_parameters_and_shapes_are_not() -> None:
    g = constant_of_shape_graph()
    assert [is_parameter(g, t) for t in range(len(g.tensors))] == [False, False, True, False, False]
    assert [parameters(g, i) for i in range(3)] == [0, 16 * 27, 16 * 27]
    assert graph_parameters(g) == (16 * 27, 0)  # shared: once
    assert summarize(g).parameters == 16 * 27


def test_unsized_parameters_are_counted_apart() -> None:
    g = graph(
        [
            tensor("w", "weight", [-1, 8]),
            tensor("r", "weight", [], rank_unknown=True),
            tensor("s", "weight", []),
            tensor("dead", "weight", [7]),  # read by no node: not a parameter of the network
        ],
        [node("n", "Custom", [0, 1, 2], [])],
    )
    assert [parameter_size(g, t) for t in range(3)] == [None, None, 1]
    assert graph_parameters(g) == (1, 2)


def test_resnet50_parameters() -> None:
    """25.56 M learned values plus the batch norms' running means and variances."""
    if not (LIGHT / "light_resnet50.onnx").exists():
        pytest.skip("the onnx package ships no light models here")
    g = load(LIGHT / "light_resnet50.onnx")
    assert sum(parameters(g, i) for i in range(len(g.nodes))) == 25_610_152
    assert summarize(g).parameters == 25_610_152  # no weight is shared; a dead 1x1 is left out


@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: p.stem)
def test_graph_count_is_the_sum_of_its_weights_and_bounds_every_node(path: Path) -> None:
    g = load(path)
    fed = {t for nd in g.nodes for t in nd.inputs}
    weights = [t for t in range(len(g.tensors)) if t in fed and is_parameter(g, t)]
    total = sum(parameter_size(g, t) or 0 for t in weights)
    s = summarize(g)
    assert s.parameters == total == graph_parameters(g)[0]
    per_node = [parameters(g, i) for i in range(len(g.nodes))]
    assert max(per_node) <= s.parameters
    assert s.parameters > 100_000  # a real network, not its int64 shape tensors
