"""Saving as ONNX the constructs the reader turns into groups: function calls, If/Loop bodies,
omitted optional inputs, custom domains; edits inside a body are saved."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.formats.onnx import models as m
from tests.formats.onnx.running import assert_same_outputs, outputs
from xocview.formats import load, save
from xocview.model import edits

F = TensorProto.FLOAT


def _saved(model: onnx.ModelProto, tmp_path: Path, name: str) -> tuple[Path, Path]:
    """The model saved as given, then opened and saved by xocview; both paths."""
    model.ir_version = min(model.ir_version, 10)  # what onnxruntime releases read
    source = m.save(model, tmp_path / f"{name}.onnx")
    out = tmp_path / f"{name}.out.onnx"
    assert save(load(source), out) == []
    onnx.checker.check_model(str(out), full_check=True)
    return source, out


@pytest.mark.parametrize("name", ["mlp", "with_function", "nested_functions", "with_loop"])
def test_constructs_round_trip(name: str, tmp_path: Path) -> None:
    source, out = _saved(getattr(m, name)(), tmp_path, name)
    assert load(out) == load(source)
    assert_same_outputs(source, out)


@pytest.mark.parametrize("cond", [True, False])
def test_an_if_round_trips_on_both_branches(cond: bool, tmp_path: Path) -> None:
    source, out = _saved(m.with_if(), tmp_path, "if")
    assert load(out) == load(source)
    feeds = {"c": np.array(cond), "x": np.array([1.0, 2.0], np.float32)}
    np.testing.assert_array_equal(outputs(out, feeds)[0], outputs(source, feeds)[0])
    (node,) = onnx.load(str(out)).graph.node
    bodies = {a.name: a.g for a in node.attribute}
    assert [n.name for n in bodies["then_branch"].node] == ["t_add"]
    assert [n.name for n in bodies["else_branch"].node] == ["e_sub"]
    assert [o.name for o in bodies["then_branch"].output] == ["t_out"]


def test_a_scan_round_trips(tmp_path: Path) -> None:
    """A running sum over the rows of x: Scan's body has a state and a scan input."""
    body = helper.make_graph(
        [
            helper.make_node("Add", ["s_in", "row"], ["s_out"], name="acc"),
            helper.make_node("Identity", ["s_out"], ["row_out"], name="emit"),
        ],
        "body",
        [
            helper.make_tensor_value_info("s_in", F, [3]),
            helper.make_tensor_value_info("row", F, [3]),
        ],
        [
            helper.make_tensor_value_info("s_out", F, [3]),
            helper.make_tensor_value_info("row_out", F, [3]),
        ],
    )
    node = helper.make_node(
        "Scan", ["init", "x"], ["final", "sums"], name="scan", body=body, num_scan_inputs=1
    )
    graph = helper.make_graph(
        [node],
        "scan",
        [
            helper.make_tensor_value_info("init", F, [3]),
            helper.make_tensor_value_info("x", F, [4, 3]),
        ],
        [
            helper.make_tensor_value_info("final", F, [3]),
            helper.make_tensor_value_info("sums", F, [4, 3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    source, out = _saved(model, tmp_path, "scan")
    assert load(out) == load(source)
    assert_same_outputs(source, out)
    (scan,) = onnx.load(str(out)).graph.node
    assert [(a.name, a.i) for a in scan.attribute if a.type == onnx.AttributeProto.INT] == [
        ("num_scan_inputs", 1)
    ]


def test_calls_of_one_function_share_it(tmp_path: Path) -> None:
    _, out = _saved(m.with_function(), tmp_path, "fn")
    written = onnx.load(str(out))
    assert [(f.domain, f.name) for f in written.functions] == [("custom", "Swish")]
    assert [(n.op_type, n.domain, list(n.input)) for n in written.graph.node] == [
        ("Swish", "custom", ["x"]),
        ("Swish", "custom", ["a"]),
    ]
    assert [n.op_type for n in written.functions[0].node] == ["Sigmoid", "Mul"]


def test_nested_functions_stay_functions(tmp_path: Path) -> None:
    _, out = _saved(m.nested_functions(), tmp_path, "nested")
    written = onnx.load(str(out))
    assert sorted(f.name for f in written.functions) == ["Inner", "Outer"]
    outer = next(f for f in written.functions if f.name == "Outer")
    assert [n.op_type for n in outer.node] == ["Inner", "Relu"]


def test_an_omitted_optional_input_stays_omitted(tmp_path: Path) -> None:
    source, out = _saved(m.omitted_input(), tmp_path, "clip")
    (clip,) = onnx.load(str(out)).graph.node
    assert list(clip.input) == ["x", "", "max"]
    assert load(out) == load(source)
    assert_same_outputs(source, out)


def test_a_custom_domain_op_keeps_its_domain_and_attributes(tmp_path: Path) -> None:
    model = m.custom_domain()
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("z", F, [1, 2]))
    source, out = _saved(model, tmp_path, "custom")
    written = onnx.load(str(out))
    fancy = written.graph.node[0]
    assert (fancy.domain, fancy.op_type) == ("vendor.ops", "Fancy")
    assert [(a.name, a.f) for a in fancy.attribute] == [("alpha", 0.5)]
    assert ("vendor.ops", 1) in [(o.domain, o.version) for o in written.opset_import]
    assert load(out) == load(source)


def _leaky_model() -> onnx.ModelProto:
    """a1 = Act(x), a2 = Act(a1) with function Act = LeakyRelu(0.1); then
    y = If(c, LeakyRelu(a2, 0.2), Neg(a2))."""
    act = helper.make_function(
        "local",
        "Act",
        ["X"],
        ["Y"],
        [helper.make_node("LeakyRelu", ["X"], ["Y"], alpha=0.1)],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    then_g = helper.make_graph(
        [helper.make_node("LeakyRelu", ["a2"], ["t"], name="t_leaky", alpha=0.2)],
        "then",
        [],
        [helper.make_tensor_value_info("t", F, [4])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["a2"], ["e"], name="e_neg")],
        "else",
        [],
        [helper.make_tensor_value_info("e", F, [4])],
    )
    nodes = [
        helper.make_node("Act", ["x"], ["a1"], name="act1", domain="local"),
        helper.make_node("Act", ["a1"], ["a2"], name="act2", domain="local"),
        helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g),
    ]
    graph = helper.make_graph(
        nodes,
        "leaky",
        [
            helper.make_tensor_value_info("x", F, [4]),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", F, [4])],
    )
    return helper.make_model(
        graph,
        functions=[act],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        ir_version=10,
    )


def _leaky(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x < 0, x * np.float32(alpha), x)


def test_edits_inside_a_function_body_and_an_if_branch_are_saved(tmp_path: Path) -> None:
    source = m.save(_leaky_model(), tmp_path / "leaky.onnx")
    graph = load(source)
    (inner,) = graph.node("act2").metadata["children_ids"]
    edits.set_attribute(graph, inner, "alpha", 0.5)
    edits.set_attribute(graph, "t_leaky", "alpha", 0.3)
    out = tmp_path / "edited.onnx"
    notes = save(graph, out)
    assert any("'Act'" in n and "'Act_2'" in n for n in notes)
    written = onnx.load(str(out))
    onnx.checker.check_model(written, full_check=True)
    alphas = {f.name: f.node[0].attribute[0].f for f in written.functions}
    assert alphas == pytest.approx({"Act": 0.1, "Act_2": 0.5})
    assert [n.op_type for n in written.graph.node] == ["Act", "Act_2", "If"]
    then = next(a.g for a in written.graph.node[2].attribute if a.name == "then_branch")
    assert then.node[0].attribute[0].f == pytest.approx(0.3)
    x = np.array([-2.0, -1.0, 0.5, 3.0], np.float32)
    got = outputs(out, {"x": x, "c": np.array(True)})[0]
    np.testing.assert_allclose(got, _leaky(_leaky(_leaky(x, 0.1), 0.5), 0.3), rtol=1e-6)
    got = outputs(out, {"x": x, "c": np.array(False)})[0]
    np.testing.assert_allclose(got, -_leaky(_leaky(x, 0.1), 0.5), rtol=1e-6)
    back = load(out)
    assert back.node(inner).attributes["alpha"] == pytest.approx(0.5)
    assert back.node("act2").metadata["function"] == {"domain": "local", "name": "Act_2"}


def test_calls_with_different_attributes_get_functions_of_their_own(tmp_path: Path) -> None:
    """A function whose body refers to the call's attribute: each call is saved with the
    values it had, as onnxruntime would run it."""
    leaky = helper.make_node("LeakyRelu", ["X"], ["Y"])
    leaky.attribute.append(helper.make_attribute_ref("alpha", onnx.AttributeProto.FLOAT))
    scale = helper.make_function(
        "local",
        "Scale",
        ["X"],
        ["Y"],
        [leaky],
        opset_imports=[helper.make_opsetid("", 17)],
        attributes=["alpha"],
    )
    nodes = [
        helper.make_node("Scale", ["x"], ["s1"], name="s1", domain="local", alpha=0.1),
        helper.make_node("Scale", ["s1"], ["y"], name="s2", domain="local", alpha=0.2),
    ]
    graph = helper.make_graph(
        nodes,
        "scale",
        [helper.make_tensor_value_info("x", F, [4])],
        [helper.make_tensor_value_info("y", F, [4])],
    )
    model = helper.make_model(
        graph,
        functions=[scale],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        ir_version=10,
    )
    source = m.save(model, tmp_path / "scale.onnx")
    out = tmp_path / "out.onnx"
    notes = save(load(source), out)
    assert len(notes) == 1 and "'Scale_2'" in notes[0]
    onnx.checker.check_model(str(out), full_check=True)
    assert_same_outputs(source, out)
    back = load(out)
    assert back.node("s2").metadata["attributes"] == {"alpha": 0.2}  # kept with the call


def test_a_users_group_is_not_written_and_the_save_says_so(tmp_path: Path) -> None:
    source = m.save(m.mlp(), tmp_path / "mlp.onnx")
    graph = load(source)
    edits.group_nodes(graph, ["/head/Identity", "/head/Identity2"], "mine")
    out = tmp_path / "out.onnx"
    notes = save(graph, out)
    assert len(notes) == 1 and "1 group" in notes[0]
    assert [n.name for n in onnx.load(str(out)).graph.node][-2:] == [
        "/head/Identity",
        "/head/Identity2",
    ]
    assert_same_outputs(source, out)
