"""xocview/model/analyses/summary.py: shape text and the one-screen summary of a graph."""

from __future__ import annotations

import pytest

from tests.model.conftest import chain, graph, grouped, node, tensor
from xocview.model import Tensor
from xocview.model.analyses.summary import format_shape, parse_shape, shape_text, summarize

# -- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "text"),
    [
        ([1, 3, 224, 224], "1x3x224x224"),
        ([7], "7"),
        ([0, 5], "0x5"),
        ([-1, 3, -1], "?x3x?"),
        ([], "scalar"),
    ],
)
def test_format_shape(shape: list[int], text: str) -> None:
    assert format_shape(shape) == text


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("1,3,224,224", [1, 3, 224, 224]),
        ("1x3x224x224", [1, 3, 224, 224]),
        (" [1, 3, 224, 224] ", [1, 3, 224, 224]),
        ("?x16", [-1, 16]),
        ("-1,16", [-1, 16]),
        ("", []),
        ("scalar", []),
    ],
)
def test_parse_shape_reads_what_people_type_and_format_shape_writes(
    text: str, shape: list[int]
) -> None:
    assert parse_shape(text) == shape
    assert parse_shape(format_shape(shape)) == shape


@pytest.mark.parametrize("text", ["a,b", "1;2", "1.5,2"])
def test_parse_shape_says_what_it_expected(text: str) -> None:
    with pytest.raises(ValueError, match="such as 1,3,224,224"):
        parse_shape(text)


def test_format_shape_of_an_unknown_rank() -> None:
    assert format_shape([], rank_known=False) == "?"
    assert format_shape([2, 3], rank_known=False) == "?"


def test_shape_text_minds_an_unknown_rank() -> None:
    assert shape_text(Tensor("t", "input", [-1, 8], "float32")) == "?x8"
    assert shape_text(Tensor("t", "input", [], "float32")) == "scalar"
    assert shape_text(Tensor("t", "input", [], "float32", {"rank_unknown": True})) == "?"
    assert shape_text(Tensor("t", "input", [], "float32", {"rank_unknown": False})) == "scalar"


# -- summarize ---------------------------------------------------------------------------------


def test_summary_of_a_flat_graph() -> None:
    g = chain(3)
    g.id, g.name = "model-1", "my model"
    g.metadata = {"producer": "test", "opset": {"": 13}}
    s = summarize(g)
    assert (s.id, s.name) == ("model-1", "my model")
    assert (s.num_nodes, s.num_groups, s.hierarchy_depth) == (3, 0, 0)
    assert s.num_tensors == 5
    assert s.tensor_kinds == {"input": 1, "output": 1, "weight": 1, "activation": 2}
    assert s.op_histogram == [("Relu", 2), ("Add", 1)]
    assert s.inputs == [g.tensors[0]] and s.inputs[0] is g.tensors[0]
    assert [t.id for t in s.outputs] == ["t3"]
    assert (s.parameters, s.unsized_weights) == (1, 0)
    assert s.metadata_keys == ["producer", "opset"]


def test_tensor_kinds_list_every_kind_in_a_fixed_order_and_skip_unknown_ones() -> None:
    g = graph([tensor("a"), tensor("b", "bias"), tensor("c", "input")], [])
    s = summarize(g)
    assert list(s.tensor_kinds.items()) == [
        ("input", 1),
        ("output", 0),
        ("weight", 0),
        ("activation", 1),
    ]
    assert s.num_tensors == 3


def test_groups_are_counted_apart_and_left_out_of_the_histogram() -> None:
    g = grouped()
    s = summarize(g)
    assert s.num_nodes == 6  # every node, groups included
    assert (s.num_groups, s.hierarchy_depth) == (2, 2)
    assert s.op_histogram == [("Relu", 3), ("Add", 1)]  # no "Block"
    assert sum(count for _, count in s.op_histogram) == s.num_nodes - s.num_groups


def test_histogram_ties_keep_first_appearance() -> None:
    g = graph(
        [],
        [node("a", "Mul"), node("b", "Add"), node("c", "Add"), node("d", "Mul"), node("e", "Exp")],
    )
    assert summarize(g).op_histogram == [("Mul", 2), ("Add", 2), ("Exp", 1)]


def test_parameters_count_fed_weights_of_known_shape_only() -> None:
    g = graph(
        [
            tensor("w", "weight", [64, 3, 7, 7]),
            tensor("b", "weight", [64]),
            tensor("s", "weight", []),  # a scalar holds one value
            tensor("e", "weight", [0, 8]),  # empty
            tensor("u", "weight", [-1, 8]),  # unknown dimension
            tensor("r", "weight", [], rank_unknown=True),  # unknown rank
            tensor("x", "input", [1, 3, 224, 224]),  # not a weight
            tensor("a", "activation", [1000]),
            tensor("dead", "weight", [10]),  # read by no node
        ],
        [node("n", "Custom", list(range(8)), [])],
    )
    s = summarize(g)
    assert s.parameters == 64 * 3 * 7 * 7 + 64 + 1 + 0
    assert s.unsized_weights == 2


def test_out_of_range_graph_inputs_and_outputs_are_left_out() -> None:
    g = chain(2)
    g.inputs = [0, 9, -1]
    g.outputs = [3, 4]
    s = summarize(g)
    assert [t.id for t in s.inputs] == ["x"]
    assert [t.id for t in s.outputs] == ["t2"]


def test_summary_of_an_empty_graph() -> None:
    s = summarize(graph([], []))
    assert (s.num_nodes, s.num_groups, s.hierarchy_depth, s.num_tensors) == (0, 0, 0, 0)
    assert s.op_histogram == [] and s.inputs == [] and s.outputs == []
    assert (s.parameters, s.unsized_weights) == (0, 0)
    assert s.metadata_keys == []
    assert set(s.tensor_kinds.values()) == {0}
