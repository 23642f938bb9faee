"""Nothing the run returns is invented: subgraphs refuse, uncomputed outputs and cycles too."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.executor.test_runtime import _t, relu_chain
from xocview.errors import RunError
from xocview.executor import RunResult, run
from xocview.executor.plan import make_plan
from xocview.formats import registry
from xocview.model import Graph, Node


def _info(name: str, shape: list[int], dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, shape)


def _save(tmp_path: Path, nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto]) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, [_info("y", [2, 3])])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)]
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=opsets), path)
    return path


def flex_attention(tmp_path: Path) -> Path:
    """x -> Relu -> FlexAttention(score_mod = a subgraph) -> y, in a custom domain."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["s"], ["o"])],
        "score_mod",
        [_info("s", [])],
        [_info("o", [])],
    )
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("FlexAttention", ["r"], ["y"], "flex", domain="custom", score_mod=body),
    ]
    return _save(tmp_path, nodes, [_info("x", [2, 3])])


def test_a_custom_op_with_a_graph_attribute_stops_the_run_naming_it(tmp_path: Path) -> None:
    with pytest.raises(RunError) as info:
        run(registry.load(flex_attention(tmp_path)))
    e = info.value
    assert e.node_id == "flex" and e.op_type == "FlexAttention"
    assert "node 'flex' (FlexAttention): no kernel for op 'FlexAttention' of domain 'custom'" in (
        str(e)
    )
    assert isinstance(e.partial, RunResult) and set(e.partial.node_times) == {"relu"}
    assert "y" not in e.partial.outputs


def test_the_body_of_a_graph_attribute_is_not_run_as_leaves(tmp_path: Path) -> None:
    g = registry.load(flex_attention(tmp_path))
    plan = make_plan(g)
    assert [s.node_id for s in plan.steps] == ["relu", "flex"]
    assert plan.steps[1].kernel is None


def _if_model(tmp_path: Path) -> Path:
    """y = If(c) then x (Identity of an outer tensor) else -x."""
    then = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["a"], "t_id")], "then", [], [_info("a", [2, 3])]
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["b"], "e_neg")], "else", [], [_info("b", [2, 3])]
    )
    node = helper.make_node("If", ["c"], ["y"], "if", then_branch=then, else_branch=other)
    return _save(tmp_path, [node], [_info("x", [2, 3]), _info("c", [], TensorProto.BOOL)])


@pytest.mark.parametrize("cond", [True, False])
def test_an_if_node_runs_the_branch_its_condition_picks(tmp_path: Path, cond: bool) -> None:
    g = registry.load(_if_model(tmp_path))
    assert [s.node_id for s in make_plan(g).steps] == ["if"]  # the branches are its bodies
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = run(g, {"x": x, "c": np.array(cond)}, repeat=3)
    np.testing.assert_array_equal(result.outputs["y"], x if cond else -x)
    ran, idle = ("t_id", "e_neg") if cond else ("e_neg", "t_id")
    assert ran in result.node_times and idle not in result.node_times
    assert result.node_times["if"] >= 0.0  # its own share: the branch's time is the branch's


def test_a_graph_attribute_kept_without_its_inputs_and_outputs_is_refused(tmp_path: Path) -> None:
    """An XOC file saved before bodies named their inputs and outputs cannot bind values."""
    g = registry.load(_if_model(tmp_path))
    for value in g.node("if").attributes.values():
        del value["inputs"], value["outputs"]
    with pytest.raises(RunError, match=r"graph attribute '(then|else)_branch' does not name its"):
        run(g)


def test_a_graph_attribute_of_an_unknown_op_refuses_as_well() -> None:
    g = relu_chain(2)
    g.nodes[1].op_type = "Custom"
    g.nodes[1].metadata["attributes"] = {"body": {"graph": "b"}}
    with pytest.raises(RunError, match="no kernel for op 'Custom'"):
        run(g)


def test_a_graph_output_nothing_makes_is_refused_before_running() -> None:
    g = relu_chain(3)
    g.nodes.pop()  # the last Relu is gone: 'y' is declared but never made
    g.invalidate()
    with pytest.raises(RunError) as info:
        run(g)
    assert str(info.value) == (
        "graph output 'y' has no value: no node produces it; expected every tensor a run reads "
        "or returns to be a graph input, a weight, or made by a node that runs"
    )
    assert info.value.partial is None  # refused before the first node


def test_an_activation_read_but_never_made_is_refused() -> None:
    g = relu_chain(3)
    g.nodes[1].outputs = []
    g.invalidate()
    with pytest.raises(RunError, match="node 'relu2' \\(Relu\\) reads tensor 't2' has no value"):
        run(g)


def test_an_output_of_a_group_that_its_leaves_do_not_make_is_refused() -> None:
    tensors = [_t("x", "input"), _t("t"), _t("y", "output")]
    nodes = [
        Node("block", "Block", [0], [1, 2], None, {"children_ids": ["relu"]}),
        Node("relu", "Relu", [0], [1], None, {"parent_id": "block"}),
    ]
    g = Graph("g", "g", tensors, nodes, [0], [2])
    with pytest.raises(RunError, match="output of group 'block' \\(Block\\) that none of its"):
        run(g)


def test_an_output_made_inside_a_subgraph_names_the_node_holding_it(tmp_path: Path) -> None:
    g = registry.load(flex_attention(tmp_path))
    g.outputs = [g.index.tensor_position("o")]  # the body's tensor as a graph output
    with pytest.raises(RunError, match="inside the subgraph of 'flex'"):
        run(g)


def test_nodes_on_a_cycle_are_refused_not_skipped() -> None:
    g = relu_chain(4)
    g.nodes[1].inputs = [4]  # relu1 reads what relu3 makes, which reads relu1's output
    g.invalidate()
    with pytest.raises(RunError, match=r"node 'relu1' \(Relu\) cannot be ordered \(with 2 other"):
        run(g)
