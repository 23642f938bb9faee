"""xocview/model/validate.py: each kind of finding alone, with its place and message."""

from __future__ import annotations

from typing import Any

import pytest

from tests.model.conftest import graph, node, tensor
from xocview.model import Finding, Graph, validate


def valid() -> Graph:
    """x, w -> conv -> a -> relu -> y, with schema attributes, an unknown dim and metadata.

    Tensors: x 0, w 1, a 2, y 3. Nodes: conv 0, relu 1.
    """
    tensors = [
        tensor("x", "input", [-1, 3, 8, 8], symbol="batch"),
        tensor("w", "weight", [4, 3, 3, 3]),
        tensor("a", "activation", [-1, 4, 6, 6]),
        tensor("y", "output", [-1, 4, 6, 6]),
    ]
    nodes = [
        node("conv", "Conv", [0, 1], [2], {"kernel_shape": [3, 3], "strides": [1, 1]}, level=1),
        node("relu", "Relu", [2], [3], {}, perf={"time": {"cpu": 1.5}}),
    ]
    return graph(tensors, nodes, [0], [3])


def valid_grouped() -> Graph:
    """valid() with conv and relu in group 'blk' (position 2), inside group 'top' (3)."""
    g = valid()
    g.nodes.append(node("blk", "Block", children_ids=["conv", "relu"], parent_id="top"))
    g.nodes.append(node("top", "Block", children_ids=["blk"]))
    g.nodes[0].metadata["parent_id"] = "blk"
    g.nodes[1].metadata["parent_id"] = "blk"
    return g


def found(g: Graph) -> list[str]:
    g.invalidate()
    return [str(f) for f in validate(g)]


def test_valid_graphs_give_no_findings() -> None:
    assert found(valid()) == []
    assert found(valid_grouped()) == []
    assert found(graph([], [])) == []


def test_a_finding_reads_place_severity_message() -> None:
    f = Finding("warning", "tensors[3]", "something odd")
    assert str(f) == "tensors[3]: warning: something odd"
    g = valid()
    g.tensors[2].id = "x"
    (only,) = validate(g)
    assert (only.severity, only.place) == ("error", "tensors[2].id")


# -- ids ---------------------------------------------------------------------------------------


def test_duplicate_tensor_id() -> None:
    g = valid()
    g.tensors[3].id = "w"
    assert found(g) == ["tensors[3].id: error: duplicate id 'w' (first at tensors[1])"]


def test_duplicate_node_id() -> None:
    g = valid()
    g.nodes[1].id = "conv"
    assert found(g) == ["nodes[1].id: error: duplicate id 'conv' (first at nodes[0])"]


def test_every_repeat_of_an_id_points_at_its_first_holder() -> None:
    g = valid()
    g.tensors[2].id = "x"
    g.tensors[3].id = "x"
    assert found(g) == [
        "tensors[2].id: error: duplicate id 'x' (first at tensors[0])",
        "tensors[3].id: error: duplicate id 'x' (first at tensors[0])",
    ]


@pytest.mark.parametrize("bad", ["", None, 7])
def test_an_id_must_be_a_non_empty_string(bad: Any) -> None:
    g = valid()
    g.tensors[1].id = bad
    assert found(g) == ["tensors[1].id: error: id must be a non-empty string"]


# -- tensors -----------------------------------------------------------------------------------


def test_unknown_kind() -> None:
    g = valid()
    g.tensors[1].kind = "bias"
    assert found(g) == [
        "tensors[1].name: error: unknown kind 'bias'; expected one of input, output, weight, "
        "activation"
    ]


def test_unknown_dtype() -> None:
    g = valid()
    g.tensors[2].dtype = "float99"
    assert found(g) == ["tensors[2].dtype: error: unknown dtype 'float99'"]


def test_every_known_dtype_name_passes() -> None:
    g = valid()
    for name in ("float32", "int64", "bool", "string", "double", "bfloat16", "undefined"):
        g.tensors[1].dtype = name
        assert found(g) == [], name


@pytest.mark.parametrize(("dim", "shown"), [(-2, "-2"), (1.5, "1.5"), (True, "True"), ("3", "'3'")])
def test_bad_shape_dimension(dim: Any, shown: str) -> None:
    g = valid()
    g.tensors[1].shape = [4, 3, dim, 3]
    assert found(g) == [
        f"tensors[1].shape[2]: error: dimension {shown} is not an integer >= -1 "
        "(-1 marks an unknown size)"
    ]


def test_zero_and_unknown_dimensions_and_scalars_are_fine() -> None:
    g = valid()
    g.tensors[1].shape = []
    g.tensors[2].shape = [0, -1]
    assert found(g) == []


# -- references --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda g: setattr(g.nodes[1], "inputs", [2, 9]),
            "nodes[1].inputs[1]: error: tensor index 9 out of range (4 tensors)",
        ),
        (
            lambda g: setattr(g.nodes[0], "outputs", [4]),
            "nodes[0].outputs[0]: error: tensor index 4 out of range (4 tensors)",
        ),
        (
            lambda g: setattr(g, "inputs", [0, -1]),
            "inputs[1]: error: tensor index -1 out of range (4 tensors)",
        ),
        (
            lambda g: setattr(g, "outputs", [10]),
            "outputs[0]: error: tensor index 10 out of range (4 tensors)",
        ),
        (
            lambda g: setattr(g.nodes[0], "inputs", [0, True]),
            "nodes[0].inputs[1]: error: tensor index True out of range (4 tensors)",
        ),
        (
            lambda g: setattr(g.nodes[0], "inputs", ["0", 1]),
            "nodes[0].inputs[0]: error: tensor index '0' out of range (4 tensors)",
        ),
    ],
    ids=["node input", "node output", "graph input", "graph output", "bool", "string"],
)
def test_index_out_of_range(edit: Any, expected: str) -> None:
    g = valid()
    edit(g)
    assert found(g) == [expected]


def test_bad_references_stop_the_checks_that_need_the_index() -> None:
    g = valid()
    g.nodes[0].outputs = [7]  # 'a' now dangles, but that check needs good references
    g.tensors[1].dtype = "float99"
    g.nodes[1].attributes["foo"] = 1
    assert found(g) == [
        "tensors[1].dtype: error: unknown dtype 'float99'",
        "nodes[0].outputs[0]: error: tensor index 7 out of range (4 tensors)",
        "nodes[1].attributes.foo: error: 'foo' is not an attribute of ONNX Relu; "
        "non-schema attributes belong in metadata",
    ]


# -- producers and cycles ----------------------------------------------------------------------


def test_tensor_produced_twice() -> None:
    g = valid()
    g.nodes.append(node("again", "Abs", [0], [3, 2]))
    assert found(g) == [  # in file order of the outputs
        "nodes[2].outputs[0]: error: tensor 'y' is already produced by nodes[1] 'relu'; "
        "a tensor has one producer",
        "nodes[2].outputs[1]: error: tensor 'a' is already produced by nodes[0] 'conv'; "
        "a tensor has one producer",
    ]


def _if_with_bodies(then_makes: list[int], else_makes: list[int]) -> Graph:
    """c, x -> If 'if' -> y; each branch holds one Identity per tensor it is told to make
    ('b' 2, 'y' 3; the branch outputs 'b'). Tensors: c 0, x 1, b 2, y 3."""
    tensors = [tensor("c", "input"), tensor("x", "input"), tensor("b"), tensor("y", "output")]
    branch = {"graph": "body", "inputs": [], "outputs": ["b"]}
    nodes = [node("if", "If", [0], [3], {"then_branch": branch, "else_branch": dict(branch)})]
    kids = []
    for label, makes in (("then_branch", then_makes), ("else_branch", else_makes)):
        for k, t in enumerate(makes):
            kids.append(f"{label}_{k}")
            nodes.append(node(kids[-1], "Identity", [1], [t], parent_id="if", subgraph=label))
    nodes[0].metadata["children_ids"] = kids
    return graph(tensors, nodes, [0, 1], [3])


def test_both_branches_of_an_if_may_make_the_same_name() -> None:
    assert found(_if_with_bodies([2], [2])) == []


def test_a_name_made_twice_in_one_branch_is_an_error() -> None:
    assert found(_if_with_bodies([2, 2], [2])) == [
        "nodes[2].outputs[0]: error: tensor 'b' is already produced by nodes[1] 'then_branch_0'; "
        "a tensor has one producer",
    ]


def test_a_branch_may_not_make_a_name_its_graph_makes() -> None:
    assert found(_if_with_bodies([2], [3])) == [
        "nodes[2].outputs[0]: error: tensor 'y' is already produced by nodes[0] 'if' in a body "
        "around this one; a tensor has one producer",
    ]


def test_a_node_claiming_a_produced_tensor_twice_is_reported_once() -> None:
    g = valid()
    g.nodes.append(node("again", "Split", [0], [2, 2]))
    assert found(g) == [
        "nodes[2].outputs[0]: error: tensor 'a' is already produced by nodes[0] 'conv'; "
        "a tensor has one producer",
    ]


def test_a_cycle_names_its_nodes() -> None:
    g = valid()
    g.nodes[0].inputs = [0, 1, 3]  # conv reads relu's output
    assert found(g) == ["nodes[0]: error: cycle through 2 nodes: 'conv' -> 'relu' -> 'conv'"]


def test_each_cycle_is_named_once_and_nodes_behind_a_cycle_are_not() -> None:
    tensors = [tensor("x", "input")] + [tensor(f"t{i}") for i in range(7)]
    g = graph(
        tensors,
        [
            node("p", "Relu", [0], [1]),
            node("a", "Add", [1, 4], [2]),  # a -> b -> c -> a
            node("b", "Neg", [2], [3]),
            node("c", "Abs", [3], [4]),
            node("tail", "Exp", [4], [5]),  # behind the cycle, not on it
            node("d", "Add", [0, 7], [6]),  # d <-> e
            node("e", "Neg", [6], [7]),
        ],
        [0],
    )
    assert found(g) == [
        "nodes[1]: error: cycle through 3 nodes: 'a' -> 'b' -> 'c' -> 'a'",
        "nodes[5]: error: cycle through 2 nodes: 'd' -> 'e' -> 'd'",
    ]


def test_a_node_reading_its_own_output_is_a_cycle() -> None:
    g = valid()
    g.nodes[1].inputs = [2, 3]
    (f,) = validate(g)
    assert (f.severity, f.place) == ("error", "nodes[1]")
    assert f.message.startswith("cycle through 1 node")
    assert f.message.endswith(": 'relu' -> 'relu'")


# -- kinds of boundary tensors -----------------------------------------------------------------


def test_dangling_activation_warning() -> None:
    g = valid()
    g.nodes[0].outputs = []  # nobody writes 'a', relu still reads it
    assert found(g) == [
        "tensors[2]: warning: activation 'a' is consumed but never produced (dangling input)"
    ]


def test_an_unused_unproduced_activation_is_not_dangling() -> None:
    g = valid()
    g.tensors.append(tensor("spare"))
    assert found(g) == []


def test_graph_input_of_another_kind() -> None:
    g = valid()
    g.inputs = [0, 1]
    assert found(g) == [
        "inputs[1]: warning: graph input 'w' has kind 'weight'; expected kind 'input'"
    ]


def test_graph_output_without_producer() -> None:
    g = valid()
    g.tensors.append(tensor("z", "output"))
    g.outputs.append(4)
    assert found(g) == ["outputs[1]: warning: graph output 'z' has no producer"]
    g.outputs = [3, 0]  # an input passed straight through is fine
    assert found(g) == []


@pytest.mark.parametrize(("t", "kind"), [(2, "input"), (2, "weight")])
def test_an_input_or_weight_written_by_a_node(t: int, kind: str) -> None:
    g = valid()
    g.tensors[t].kind = kind
    assert found(g) == [
        f"tensors[2]: warning: {kind} 'a' is produced by nodes[0] 'conv'; "
        "expected kind 'activation' or 'output'"
    ]


# -- hierarchy ---------------------------------------------------------------------------------


def test_parent_id_naming_unknown_node() -> None:
    g = valid()
    g.nodes[0].metadata["parent_id"] = "ghost"
    assert found(g) == ["nodes[0].metadata.parent_id: error: parent 'ghost' is not a node id"]


def test_parent_id_that_is_not_a_string() -> None:
    g = valid()
    g.nodes[1].metadata["parent_id"] = 5
    assert found(g) == ["nodes[1].metadata.parent_id: error: parent 5 is not a node id"]


def test_parent_id_naming_itself() -> None:
    g = valid()
    g.nodes[1].metadata["parent_id"] = "relu"
    assert found(g) == [
        "nodes[1].metadata.parent_id: error: node 'relu' names itself as its parent"
    ]


def test_parent_that_does_not_list_the_child() -> None:
    g = valid_grouped()
    g.nodes[2].metadata["children_ids"] = ["conv"]  # relu still names blk
    assert found(g) == [
        "nodes[1].metadata.parent_id: error: parent 'blk' (nodes[2]) does not list 'relu' "
        "in its children_ids"
    ]


def test_parent_without_children_ids() -> None:
    g = valid_grouped()
    del g.nodes[3].metadata["children_ids"]  # blk still names top
    assert found(g) == [
        "nodes[2].metadata.parent_id: error: parent 'top' (nodes[3]) does not list 'blk' "
        "in its children_ids"
    ]


def test_child_that_does_not_name_the_parent() -> None:
    g = valid_grouped()
    del g.nodes[0].metadata["parent_id"]  # blk still lists conv
    assert found(g) == [
        "nodes[2].metadata.children_ids[0]: error: child 'conv' (nodes[0]) does not name "
        "'blk' as its parent_id"
    ]


def test_child_that_names_another_parent() -> None:
    g = valid_grouped()
    g.nodes[3].metadata["children_ids"] = ["blk", "relu"]  # relu names blk, not top
    assert found(g) == [
        "nodes[3].metadata.children_ids[1]: error: child 'relu' (nodes[1]) does not name "
        "'top' as its parent_id"
    ]


def test_child_that_is_not_a_node_id() -> None:
    g = valid_grouped()
    g.nodes[3].metadata["children_ids"] = ["blk", "ghost", 3]
    assert found(g) == [
        "nodes[3].metadata.children_ids[1]: error: child 'ghost' is not a node id",
        "nodes[3].metadata.children_ids[2]: error: child 3 is not a node id",
    ]


def test_children_ids_that_are_not_a_list() -> None:
    g = valid()
    g.nodes[0].metadata["children_ids"] = "relu"
    assert found(g) == [
        "nodes[0].metadata.children_ids: error: children_ids must be a list of node ids"
    ]


def test_hierarchy_cycle() -> None:
    g = valid()
    g.nodes.append(node("g1", "Block", children_ids=["g2"], parent_id="g3"))
    g.nodes.append(node("g2", "Block", children_ids=["g3"], parent_id="g1"))
    g.nodes.append(node("g3", "Block", children_ids=["g1"], parent_id="g2"))
    assert found(g) == [
        "nodes[2].metadata.parent_id: error: hierarchy cycle: 'g1' -> 'g3' -> 'g2' -> 'g1'"
    ]


def test_a_hierarchy_cycle_is_reported_once_even_with_nodes_below_it() -> None:
    g = valid()
    g.nodes.append(node("g1", "Block", children_ids=["g2", "relu"], parent_id="g2"))
    g.nodes.append(node("g2", "Block", children_ids=["g1"], parent_id="g1"))
    g.nodes[1].metadata["parent_id"] = "g1"
    # the walk from relu (nodes[1]) enters the cycle at g1 (nodes[2]), which is where it is told
    assert found(g) == ["nodes[2].metadata.parent_id: error: hierarchy cycle: 'g1' -> 'g2' -> 'g1'"]


# -- ONNX schema -------------------------------------------------------------------------------


def test_attribute_not_in_the_onnx_schema() -> None:
    g = valid()
    g.nodes[0].attributes["foo"] = 1
    assert found(g) == [
        "nodes[0].attributes.foo: error: 'foo' is not an attribute of ONNX Conv; "
        "non-schema attributes belong in metadata"
    ]


def test_attributes_of_older_versions_of_an_op_count_as_schema() -> None:
    g = valid()
    g.nodes[1].attributes["consumed_inputs"] = [0]  # Relu-1 only
    assert found(g) == []


def test_operators_outside_onnx_may_have_any_attributes() -> None:
    g = valid()
    g.nodes.append(node("custom", "MyFusedOp", [3], [], {"foo": 1, "bar": "x"}))
    assert found(g) == []


# -- several at once ---------------------------------------------------------------------------


def test_findings_come_grouped_by_check_in_a_fixed_order() -> None:
    g = valid_grouped()
    g.nodes[3].attributes["x"] = 1  # ignored: Block is not an ONNX op
    g.nodes[1].attributes["alpha"] = 0.1  # not a Relu attribute
    g.nodes[0].metadata["parent_id"] = "top"  # top does not list conv; blk still does
    g.nodes[1].outputs = [3, 2]  # relu writes conv's output as well
    g.tensors[3].dtype = "f32"
    g.tensors[2].id = "x"
    assert found(g) == [
        "tensors[2].id: error: duplicate id 'x' (first at tensors[0])",
        "tensors[3].dtype: error: unknown dtype 'f32'",
        "nodes[1].outputs[1]: error: tensor 'x' is already produced by nodes[0] 'conv'; "
        "a tensor has one producer",
        "nodes[0].metadata.parent_id: error: parent 'top' (nodes[3]) does not list 'conv' "
        "in its children_ids",
        "nodes[2].metadata.children_ids[0]: error: child 'conv' (nodes[0]) does not name "
        "'blk' as its parent_id",
        "nodes[1].attributes.alpha: error: 'alpha' is not an attribute of ONNX Relu; "
        "non-schema attributes belong in metadata",
    ]
