"""TF2 functional control flow runs: While as an ONNX Loop, If as an ONNX If, their bodies
built and lowered like the rest of the graph and drawn as groups a user opens; a Keras LSTM
SavedModel (a While over TensorList ops) runs too.

The files and TensorFlow's outputs for them are made by tests/data/tensorflow/make_control.py
(``<name>_io.npz``: for each feed k, ``k/in:<input>`` and ``k/out:<output>``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.formats.tensorflow.checks import ATOL, DATA, RTOL, groups_agree, left_unmapped, load
from xocview.errors import RunError
from xocview.executor import run
from xocview.formats.source import Source
from xocview.formats.tensorflow import reader
from xocview.formats.tensorflow.protos import message
from xocview.model import Graph, validate


def _runs(graph: Graph, values: Path) -> float:
    """Run every feed of ``values``; the largest difference from TensorFlow's outputs."""
    worst = 0.0
    with np.load(values) as z:
        feeds_of = sorted({k.split("/")[0] for k in z.files})
        for k in feeds_of:
            feeds = {f.split(":", 1)[1]: z[f] for f in z.files if f.startswith(f"{k}/in:")}
            want = {f.split(":", 1)[1]: z[f] for f in z.files if f.startswith(f"{k}/out:")}
            assert sorted(graph.tensors[t].id for t in graph.outputs) == sorted(want)
            got = run(graph, feeds).outputs
            for name, value in want.items():
                assert got[name].shape == value.shape and got[name].dtype == value.dtype
                np.testing.assert_allclose(got[name], value, rtol=RTOL, atol=ATOL, err_msg=name)
                worst = max(worst, float(np.max(np.abs(got[name] - value), initial=0.0)))
    return worst


CASES = [
    ("while_frozen", "while_frozen.pb", "Loop"),
    ("cond_frozen", "cond_frozen.pb", "If"),
    ("keras_lstm", "keras_lstm/saved_model.pb", "Loop"),  # TensorList ops in a While
]


@pytest.mark.parametrize(("name", "path", "holder"), CASES)
def test_functional_control_flow_runs_to_tensorflows_outputs(
    name: str, path: str, holder: str
) -> None:
    graph = load(path)
    assert left_unmapped(graph) == []
    assert not [f for f in validate(graph) if f.severity == "error"]
    groups_agree(graph)
    assert any(n.op_type == holder for n in graph.nodes)
    worst = _runs(graph, DATA / f"{name}_io.npz")
    print(f"{name}: largest difference {worst:.3g}")


def test_a_loop_is_a_group_whose_body_holds_tf_body_then_cond() -> None:
    graph = load("while_frozen.pb")
    by_id = {n.id: n for n in graph.nodes}
    loops = [n for n in graph.nodes if n.op_type == "Loop"]
    assert len(loops) == 2
    for loop in loops:
        group = by_id[loop.metadata["parent_id"]]  # the While: first condition, then the Loop
        assert group.op_type == "StatelessWhile" and group.metadata["derived"] == "tensorflow"
        assert "domain" not in group.metadata and group.metadata["tf"]["attrs"]["body"]
        assert loop.metadata["omitted_inputs"] == [0]
        body = loop.attributes["body"]
        kids = [by_id[k] for k in loop.metadata["children_ids"]]
        assert kids and all(k.metadata["subgraph"] == "body" for k in kids)
        ids = {t.id for t in graph.tensors}
        assert set(body["inputs"]) <= ids and set(body["outputs"]) <= ids
        assert len(body["inputs"]) == len(loop.inputs) + 1  # iteration, condition, values
        assert len(body["outputs"]) == len(loop.outputs) + 1
        tf_ops = {k.metadata.get("tf", {}).get("op") for k in kids}
        assert "Less" in tf_ops  # the condition, on the body's results
        assert graph.tensors[loop.inputs[0]].dtype == "bool"


def test_an_lstm_loop_body_holds_the_cell_and_its_tensor_list_writes() -> None:
    graph = load("keras_lstm/saved_model.pb")
    by_id = {n.id: n for n in graph.nodes}
    loop = next(n for n in graph.nodes if n.op_type == "Loop")

    def body_of(n: object) -> bool:
        up = getattr(n, "metadata", {}).get("parent_id")
        while up is not None and up != loop.id:
            up = by_id[up].metadata.get("parent_id")
        return up == loop.id

    inside = {n.metadata.get("tf", {}).get("op") for n in graph.nodes if body_of(n)}
    assert {"MatMul", "Sigmoid", "TensorListGetItem", "TensorListSetItem"} <= inside
    assert not [f for f in validate(graph) if f.severity == "error"]


def test_if_branches_are_the_two_bodies() -> None:
    graph = load("cond_frozen.pb")
    node = next(n for n in graph.nodes if n.op_type == "If")
    by_id = {n.id: n for n in graph.nodes}
    marks = {by_id[k].metadata["subgraph"] for k in node.metadata["children_ids"]}
    assert marks == {"then_branch", "else_branch"}
    assert node.attributes["then_branch"]["inputs"] == []
    assert node.metadata["tf"]["op"] == "StatelessIf"


def _while_in_body(tmp_path: Path) -> Path:
    """A While whose body runs another While: the inner one stays a TF node, named."""
    gd = message("GraphDef")()
    fns = {}
    for name in ("cond", "body", "inner"):
        f = gd.library.function.add()
        f.signature.name = name
        f.signature.input_arg.add(name="v", type=3)
        f.signature.output_arg.add(name="r", type=10 if name == "cond" else 3)
        fns[name] = f
    c = fns["cond"].node_def.add(name="lt", op="Less", input=["v", "ten"])
    c.attr["T"].type = 3
    k = fns["cond"].node_def.add(name="ten", op="Const")
    k.attr["dtype"].type = 3
    k.attr["value"].tensor.dtype = 3
    k.attr["value"].tensor.int_val.append(10)
    fns["cond"].ret["r"] = "lt:z:0"
    w = fns["body"].node_def.add(name="w", op="While", input=["v"])
    w.attr["cond"].func.name = "cond"
    w.attr["body"].func.name = "inner"
    w.attr["T"].list.type.append(3)
    fns["body"].ret["r"] = "w:output:0"
    fns["inner"].ret["r"] = "v"
    x = gd.node.add(name="x", op="Placeholder")
    x.attr["dtype"].type = 3
    outer = gd.node.add(name="loop", op="While", input=["x"])
    outer.attr["cond"].func.name = "cond"
    outer.attr["body"].func.name = "body"
    outer.attr["T"].list.type.append(3)
    path = tmp_path / "nested.pb"
    path.write_bytes(gd.SerializeToString())
    return path


def test_nested_control_flow_is_refused_by_name(tmp_path: Path) -> None:
    graph = reader.load(Source(_while_in_body(tmp_path)))
    left = [n for n in graph.nodes if n.metadata.get("domain") == "tensorflow"]
    assert [n.op_type for n in left] == ["While"]
    assert "inside a loop or branch body" in left[0].metadata["not_mapped"]
    assert any(n.op_type == "Loop" for n in graph.nodes)  # the outer one is mapped
    groups_agree(graph)
    with pytest.raises(RunError) as e:
        run(graph, {"x": np.array(3, np.int32)})
    assert "(While)" in str(e.value) and "inside a loop or branch body" in str(e.value)
