"""xocview/formats/onnx/ (reader, build, types, attrs, weights): ONNX models into the model."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest

from tests.formats.onnx import models as m
from xocview.errors import FormatError
from xocview.formats import load, save
from xocview.model import Hierarchy, validate

F16 = onnx.TensorProto.FLOAT16
LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
LIGHT_MODELS = sorted(LIGHT.glob("*.onnx"))


def test_kinds_shapes_dtypes_and_symbols(tmp_path: Path) -> None:
    g = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    kinds = {t.id: t.kind for t in g.tensors}
    assert kinds == {
        "W": "weight",
        "b": "weight",
        "x": "input",
        "h": "activation",
        "h2": "activation",
        "y": "activation",
        "z": "activation",
        "z2": "output",
    }
    x = g.tensor("x")
    assert (x.shape, x.dtype, x.metadata) == ([-1, 4], "float32", {"shape_symbols": ["N", None]})
    assert g.tensor("W").shape == [4, 3]
    # "h2" has no value_info: shape inference fills it.
    assert g.tensor("h2").shape == [-1, 3]
    assert [g.tensors[i].id for i in g.inputs] == ["x"]
    assert [g.tensors[i].id for i in g.outputs] == ["z2"]


def test_metadata_keeps_what_onnx_says(tmp_path: Path) -> None:
    g = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    assert g.metadata["producer_name"] == "tests"
    assert g.metadata["producer_version"] == "1.0"
    assert g.metadata["opset_import"] == [{"domain": "ai.onnx", "version": 17}]
    assert g.metadata["metadata_props"] == {"author": "xocview", "quant": {"scheme": "none"}}
    assert g.metadata["graph_doc_string"] == "a tiny mlp"
    add = g.node("/encoder/fc/Add")
    assert add.metadata["doc_string"] == "bias"
    assert add.metadata["name"] == "/encoder/fc/Add"


def test_weights_load_lazily_and_have_values(tmp_path: Path) -> None:
    g = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    w = g.tensor("W")
    assert w.has_data and not isinstance(w._data, np.ndarray)
    np.testing.assert_array_equal(w.data, np.arange(12, dtype=np.float32).reshape(4, 3))


def test_scoped_names_give_derived_groups(tmp_path: Path) -> None:
    g = load(m.save(m.mlp(), tmp_path / "mlp.onnx"))
    groups = {nd.id: nd.metadata for nd in g.nodes if "children_ids" in nd.metadata}
    assert set(groups) == {"/encoder", "/encoder/fc", "/head"}
    assert groups["/encoder/fc"]["derived"] == "scope"
    assert groups["/encoder/fc"]["parent_id"] == "/encoder"
    assert groups["/encoder"]["children_ids"] == ["/encoder/act/Relu", "/encoder/fc"]
    # "/encoder/act" holds one node only: no box for it, the node sits in "/encoder".
    assert g.node("/encoder/act/Relu").metadata["parent_id"] == "/encoder"
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_function_calls_become_groups_of_their_body(tmp_path: Path) -> None:
    g = load(m.save(m.with_function(), tmp_path / "fn.onnx"))
    h = Hierarchy(g)
    call = g.node("swish1")
    assert call.op_type == "Swish" and call.inputs == [] and call.outputs == []
    assert call.metadata["function"] == {"domain": "custom", "name": "Swish"}
    assert call.metadata["children_ids"] == ["swish1/Sigmoid_0", "swish1/Mul_1"]
    mul = g.node("swish1/Mul_1")
    assert [g.tensors[i].id for i in mul.inputs] == ["x", "swish1/S"]
    assert [g.tensors[i].id for i in mul.outputs] == ["a"]
    assert int(h.is_group.sum()) == 2
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_if_becomes_a_group_of_both_branches(tmp_path: Path) -> None:
    g = load(m.save(m.with_if(), tmp_path / "if.onnx"))
    node = g.node("branch")
    assert sorted(node.metadata["children_ids"]) == ["e_sub", "t_add"]
    then = node.attributes["then_branch"]
    assert then["graph"] == "then" and then["inputs"] == []
    assert then["outputs"] == [g.tensors[g.node("t_add").outputs[0]].id]
    assert g.node("t_add").metadata == {
        "name": "t_add",
        "parent_id": "branch",
        "subgraph": "then_branch",
    }
    assert [g.tensors[i].id for i in node.inputs] == ["c"]
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_omitted_optional_inputs_are_recorded(tmp_path: Path) -> None:
    g = load(m.save(m.omitted_input(), tmp_path / "clip.onnx"))
    clip = g.node("clip")
    assert [g.tensors[i].id for i in clip.inputs] == ["x", "max"]
    assert clip.metadata["omitted_inputs"] == [1]


def test_failing_inference_does_not_stop_the_load(tmp_path: Path) -> None:
    g = load(m.save(m.custom_domain(), tmp_path / "custom.onnx"))
    y = g.tensor("y")
    assert y.dtype == "undefined" and y.metadata == {"rank_unknown": True}
    f = g.node("f")
    assert f.attributes == {} and f.metadata["attributes"] == {"alpha": 0.5}
    assert f.metadata["domain"] == "vendor.ops"


def test_external_data_opens_without_reading_and_reads_on_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    m.with_external_data(tmp_path)
    opened: list[str] = []
    real_open = open

    def spy(file: object, *args: object, **kwargs: object) -> object:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr("builtins.open", spy)
    g = load(tmp_path / "model.onnx")
    assert not any(p.endswith("weights.bin") for p in opened)
    w = g.tensor("W")
    assert w.metadata["external_data"]["location"] == "weights.bin"
    np.testing.assert_array_equal(w.data, np.arange(12, dtype=np.float32).reshape(4, 3))


@pytest.mark.parametrize("location", ["../outside.bin", "/etc/passwd", "sub/../../x.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path: Path, location: str) -> None:
    model = m.mlp()
    w = model.graph.initializer[0]
    w.data_location = onnx.TensorProto.EXTERNAL
    w.ClearField("raw_data")
    w.ClearField("float_data")
    entry = w.external_data.add()
    entry.key, entry.value = "location", location
    path = m.save(model, tmp_path / "model.onnx")
    with pytest.raises(FormatError) as info:
        load(path)
    assert info.value.place == "initializer 'W' external_data 'location'"
    assert location in info.value.problem


def test_a_file_link_out_of_the_folder_is_followed_a_folder_link_is_refused(
    tmp_path: Path,
) -> None:
    """The link is the user's (a Hugging Face cache's blobs); a folder link would let the
    file's text pick any file beyond it (safe_paths)."""
    outside = tmp_path / "outside"
    inside = tmp_path / "model"
    outside.mkdir()
    inside.mkdir()
    m.with_external_data(outside)
    (outside / "model.onnx").rename(inside / "model.onnx")
    os.symlink(outside / "weights.bin", inside / "weights.bin")
    assert load(inside / "model.onnx").tensor("W").data is not None
    model = onnx.load(str(inside / "model.onnx"), load_external_data=False)
    entry = next(e for e in model.graph.initializer[0].external_data if e.key == "location")
    entry.value = "up/weights.bin"
    onnx.save(model, str(inside / "model.onnx"))
    os.symlink(outside, inside / "up")
    with pytest.raises(FormatError, match="leaves the model's folder through a linked folder"):
        load(inside / "model.onnx")


def test_missing_external_file_fails_on_use_with_a_clear_error(tmp_path: Path) -> None:
    m.with_external_data(tmp_path)
    (tmp_path / "weights.bin").unlink()
    g = load(tmp_path / "model.onnx")
    with pytest.raises(FormatError, match=r"external data file 'weights\.bin' is missing"):
        _ = g.tensor("W").data


def test_truncated_and_foreign_files_get_clear_errors(tmp_path: Path) -> None:
    whole = m.save(m.mlp(), tmp_path / "whole.onnx").read_bytes()
    cut = tmp_path / "cut.onnx"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(FormatError, match="truncated"):
        load(cut)
    text = tmp_path / "notes.onnx"
    text.write_text("hello, not a model", encoding="utf-8")
    with pytest.raises(FormatError, match="ONNX: does not start like an ONNX ModelProto"):
        load(text)


def test_onnx_content_is_recognised_under_another_name(tmp_path: Path) -> None:
    path = m.save(m.mlp(), tmp_path / "model.bin")
    assert len(load(path).nodes) == 5 + 3


@pytest.mark.skipif(not LIGHT_MODELS, reason="onnx package ships no light models")
@pytest.mark.parametrize("path", LIGHT_MODELS, ids=lambda p: p.stem)
def test_every_light_model_converts_and_loads_back_equal(path: Path, tmp_path: Path) -> None:
    g = load(path)
    proto = onnx.load(str(path), load_external_data=False)
    ops = [nd for nd in g.nodes if nd.metadata.get("derived") != "section"]  # flat ones get parts
    assert len(ops) == len(proto.graph.node)
    assert {t.id for t in g.tensors if t.kind == "weight"} == {
        i.name for i in proto.graph.initializer
    }
    used = {int(t) for t in g.index.node_in} | set(g.outputs)
    assert all(g.tensors[t].dtype != "undefined" for t in used)  # typed or inferred
    out = tmp_path / "out.json"
    save(g, out)
    assert load(out) == g
    assert [f for f in validate(g) if f.severity == "error"] == []


def _graph_model(
    nodes: list[onnx.NodeProto], inputs: list[str], outputs: list[str]
) -> onnx.ModelProto:
    f = onnx.TensorProto.FLOAT
    graph = onnx.helper.make_graph(
        nodes,
        "g",
        [onnx.helper.make_tensor_value_info(n, f, [2]) for n in inputs],
        [onnx.helper.make_tensor_value_info(n, f, [2]) for n in outputs],
    )
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


def test_dangling_references_load_and_are_reported(tmp_path: Path) -> None:
    model = _graph_model(
        [onnx.helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], ["x"], ["y"]
    )
    g = load(m.save(model, tmp_path / "m.onnx"))
    assert g.tensor("ghost").kind == "activation"
    assert any(
        f.severity == "warning" and "'ghost' is consumed but never produced" in f.message
        for f in validate(g)
    )


def test_duplicate_node_names_get_unique_ids_and_double_producers_are_errors(
    tmp_path: Path,
) -> None:
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["y"], name="same"),
        onnx.helper.make_node("Neg", ["x"], ["y"], name="same"),
    ]
    g = load(m.save(_graph_model(nodes, ["x"], ["y"]), tmp_path / "m.onnx"))
    assert [n.id for n in g.nodes] == ["same", "same_2"]
    assert [n.metadata["name"] for n in g.nodes] == ["same", "same"]
    errors = [f for f in validate(g) if f.severity == "error"]
    assert [f.place for f in errors] == ["nodes[1].outputs[0]"]


def test_an_empty_graph_is_refused_clearly(tmp_path: Path) -> None:
    path = m.save(_graph_model([], [], []), tmp_path / "empty.onnx")
    with pytest.raises(FormatError) as info:
        load(path)
    assert str(info.value) == (
        f"{path}: graph: the graph is empty (no nodes, inputs, outputs or "
        "initializers); expected a model with at least one node or value"
    )


def test_a_transformer_opens_as_a_handful_of_blocks(tmp_path: Path) -> None:
    """1,000 nodes named by module path collapse to a few boxes at the top level."""
    from onnx import helper

    nodes, x = [], "x"
    for i in range(100):
        for k in range(10):
            part = (
                "attention",
                "attention",
                "attention",
                "intermediate",
                "intermediate",
                "output",
                "output",
                "output",
                "output",
                "output",
            )[k]
            y = f"t{i}_{k}"
            nodes.append(
                helper.make_node("Relu", [x], [y], name=f"/encoder/layer.{i}/{part}/Relu_{k}")
            )
            x = y
    nodes.append(helper.make_node("Identity", [x], ["y"], name="/pooler/Identity"))
    g = load(m.save(_graph_model(nodes, ["x"], ["y"]), tmp_path / "bert.onnx"))
    from xocview.model import visible_graph

    top = visible_graph(g, ())
    names = sorted(g.nodes[i].id for i in top.node_items)
    assert names == ["/encoder", "/pooler/Identity"]
    layers = visible_graph(g, ["/encoder"])
    assert len(layers.node_items) == 101
    assert g.node("/encoder/layer.7").metadata["children_ids"] == [
        "/encoder/layer.7/attention",
        "/encoder/layer.7/intermediate",
        "/encoder/layer.7/output",
    ]


def test_loop_body_is_a_group_with_its_own_inputs(tmp_path: Path) -> None:
    g = load(m.save(m.with_loop(), tmp_path / "loop.onnx"))
    loop = g.node("loop")
    assert loop.metadata["children_ids"] == ["body_cond", "body_add"]
    assert [g.tensors[i].id for i in loop.inputs] == ["trip", "cond", "zero"]
    acc = g.tensor("acc_in")
    assert acc.kind == "input" and acc.metadata["subgraph_of"] == "loop"
    assert acc.shape == [2] and acc.dtype == "float32"
    add = g.node("body_add")
    assert [g.tensors[i].id for i in add.inputs] == ["acc_in", "x"]
    assert g.inputs == [g.index.tensor_position("x")]  # body inputs are not graph inputs
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_functions_calling_functions_nest_as_groups(tmp_path: Path) -> None:
    g = load(m.save(m.nested_functions(), tmp_path / "nested.onnx"))
    h = Hierarchy(g)
    assert g.node("call").metadata["children_ids"] == ["call/Inner_0", "call/Relu_1"]
    inner = g.node("call/Inner_0")
    assert inner.metadata["children_ids"] == ["call/Inner_0/Add_0"]
    add = g.node("call/Inner_0/Add_0")
    assert [g.tensors[i].id for i in add.inputs] == ["x", "x"]
    assert [g.tensors[i].id for i in add.outputs] == ["call/T"]
    assert h.max_depth == 2
    assert [f for f in validate(g) if f.severity == "error"] == []


def test_a_scope_spelled_two_ways_is_one_group_in_node_order(tmp_path: Path) -> None:
    names = ["/enc/Relu", "enc/Neg", "//enc/Abs", "/enc/Relu_1"]
    tensors = ["x", "a", "b", "c", "y"]
    nodes = [
        onnx.helper.make_node(op, [tensors[k]], [tensors[k + 1]], name=name)
        for k, (op, name) in enumerate(zip(["Relu", "Neg", "Abs", "Relu"], names, strict=True))
    ]
    g = load(m.save(_graph_model(nodes, ["x"], ["y"]), tmp_path / "m.onnx"))
    assert g.node("/enc").metadata["children_ids"] == names
    assert all(g.node(n).metadata["parent_id"] == "/enc" for n in names)


def test_float_attributes_keep_their_shortest_form_and_sign(tmp_path: Path) -> None:
    nodes = [
        onnx.helper.make_node("LeakyRelu", ["x"], ["a"], name="neg_zero", alpha=-0.0),
        onnx.helper.make_node("LeakyRelu", ["a"], ["b"], name="zero", alpha=0.0),
        onnx.helper.make_node("LeakyRelu", ["b"], ["c"], name="small", alpha=1e-5),
        onnx.helper.make_node("LeakyRelu", ["c"], ["y"], name="again", alpha=1e-5),
    ]
    g = load(m.save(_graph_model(nodes, ["x"], ["y"]), tmp_path / "m.onnx"))
    alphas = [g.node(n).attributes["alpha"] for n in ("neg_zero", "zero", "small", "again")]
    assert [str(a) for a in alphas] == ["-0.0", "0.0", "1e-05", "1e-05"]


def test_value_info_inside_a_branch_types_its_values(tmp_path: Path) -> None:
    model = m.with_if()
    then = model.graph.node[0].attribute[0].g
    then.node[0].output[0] = "t_mid"
    then.node.append(onnx.helper.make_node("Neg", ["t_mid"], ["t_out"], name="t_neg"))
    # A type inference could not know (it would say [2]): only value_info gives it.
    then.value_info.append(onnx.helper.make_tensor_value_info("t_mid", F16, ["n"]))
    g = load(m.save(model, tmp_path / "if.onnx"))
    mid = g.tensor("t_mid")
    assert (mid.dtype, mid.shape, mid.metadata) == ("float16", [-1], {"shape_symbols": ["n"]})


def test_a_shadowing_initializer_outside_the_folder_is_still_refused(tmp_path: Path) -> None:
    model = m.with_if()
    then = model.graph.node[0].attribute[0].g
    w = onnx.numpy_helper.from_array(np.ones(1, dtype=np.float32), "one")  # shadows "one"
    w.ClearField("raw_data")
    w.data_location = onnx.TensorProto.EXTERNAL
    entry = w.external_data.add()
    entry.key, entry.value = "location", "../outside.bin"
    then.initializer.append(w)
    with pytest.raises(FormatError, match="leaves the model's folder"):
        load(m.save(model, tmp_path / "if.onnx"))
