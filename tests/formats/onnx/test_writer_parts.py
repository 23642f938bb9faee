"""The writer's parts one by one: attribute and value protos, opsets, nesting, stale types and
the metadata_props entry."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from tests.formats.onnx import models as m
from xocview.errors import FormatError
from xocview.formats import load
from xocview.formats.onnx.attr_protos import AttributeProblem, attribute_proto
from xocview.formats.onnx.nesting import TOP, Nesting
from xocview.formats.onnx.opsets import PREFERRED_OPSET, model_opsets
from xocview.formats.onnx.sidecar import KEY, pack, restore
from xocview.formats.onnx.stale_types import replace_stale_types, settle_types
from xocview.formats.onnx.value_protos import type_proto, weight_proto
from xocview.model import Graph, Node, Tensor

_A = onnx.AttributeProto


def _no_graphs(label: str, value: dict) -> onnx.GraphProto:  # type: ignore[type-arg]
    raise AssertionError(f"no graph expected ({label})")


@pytest.mark.parametrize(
    ("value", "kind", "field", "want"),
    [
        (3, _A.INT, "i", 3),
        (True, _A.INT, "i", 1),
        (0.5, _A.FLOAT, "f", 0.5),
        ("same", _A.STRING, "s", b"same"),
        ([1, 2], _A.INTS, "ints", [1, 2]),
        ([1, 2.5], _A.FLOATS, "floats", [1.0, 2.5]),
        (["a", "b"], _A.STRINGS, "strings", [b"a", b"b"]),
        ([], _A.INTS, "ints", []),
    ],
)
def test_an_attribute_without_a_schema_takes_the_type_of_its_value(
    value: object, kind: int, field: str, want: object
) -> None:
    attr = attribute_proto("a", value, None, _no_graphs)
    assert attr.type == kind
    got = getattr(attr, field)
    assert (list(got) if isinstance(want, list) else got) == want


def test_the_schema_type_wins_over_the_values_look() -> None:
    assert attribute_proto("alpha", 2, _A.FLOAT, _no_graphs).f == 2.0
    assert list(attribute_proto("axes", [1.0], _A.INTS, _no_graphs).ints) == [1]
    with pytest.raises(AttributeProblem, match="not an integer"):
        attribute_proto("axis", 1.5, _A.INT, _no_graphs)


def test_tensor_and_type_attributes_come_back_from_their_summaries() -> None:
    value = {"tensor": {"dtype": "int64", "shape": [2], "values": [3, 4]}}
    attr = attribute_proto("value", value, _A.TENSOR, _no_graphs)
    np.testing.assert_array_equal(onnx.numpy_helper.to_array(attr.t), np.array([3, 4]))
    kept_text = str(helper.make_tensor_type_proto(TensorProto.FLOAT, [2])).strip()
    tp = attribute_proto("t", {"type": kept_text}, None, _no_graphs).tp
    assert tp.tensor_type.elem_type == TensorProto.FLOAT
    with pytest.raises(AttributeProblem, match="100,000 values were not kept"):
        big = {"tensor": {"dtype": "float32", "shape": [100000]}}
        attribute_proto("value", big, _A.TENSOR, _no_graphs)


def test_a_tensor_type_keeps_symbols_unknown_dims_and_unknown_rank() -> None:
    t = Tensor("x", "input", [-1, 3, -1], "float32", {"shape_symbols": ["N", None, None]})
    dims = type_proto(t).tensor_type.shape.dim  # type: ignore[union-attr]
    assert [(d.dim_param, d.dim_value, d.HasField("dim_value")) for d in dims] == [
        ("N", 0, False),
        ("", 3, True),
        ("", 0, False),
    ]
    scalar = type_proto(Tensor("s", "input", [], "int64"))
    assert scalar is not None and scalar.tensor_type.HasField("shape")
    free = type_proto(Tensor("r", "activation", [], "float32", {"rank_unknown": True}))
    assert free is not None and not free.tensor_type.HasField("shape")
    assert type_proto(Tensor("u", "activation", [], "undefined")) is None
    assert type_proto(Tensor("q", "activation", [], "float32", {"type": "sequence"})) is None


def test_a_weight_is_written_in_its_dtype_and_must_fit_its_shape() -> None:
    w = Tensor("w", "weight", [2], "float16", {}, np.array([1.0, 2.0]))
    proto = weight_proto(w, "w", "f.onnx")
    assert proto.data_type == TensorProto.FLOAT16
    w.shape = [3]
    with pytest.raises(FormatError, match="values have shape \\[2\\]"):
        weight_proto(w, "w", "f.onnx")


def _json_graph(*nodes: Node) -> Graph:
    tensors = [Tensor(f"t{k}", "activation", [2], "float32") for k in range(4)]
    return Graph("g", "g", tensors, list(nodes))


def test_a_graph_without_opsets_gets_the_newest_that_all_its_ops_fit() -> None:
    plain = _json_graph(Node("r", "Relu", [0], [1]))
    assert model_opsets(plain, plain.nodes, "f") == {"": PREFERRED_OPSET}
    old = _json_graph(Node("r", "Reshape", [0], [1], {"shape": [2]}))  # Reshape-1's attribute
    assert model_opsets(old, old.nodes, "f") == {"": 4}


def test_an_op_no_opset_fits_is_named() -> None:
    mixed = _json_graph(Node("r", "Reshape", [0], [1], {"shape": [2]}), Node("g", "Gelu", [1], [2]))
    with pytest.raises(FormatError) as e:
        model_opsets(mixed, mixed.nodes, "f")
    assert e.value.place in ("node 'r'", "node 'g'")


def test_nodes_find_their_scopes_and_order(tmp_path: Path) -> None:
    graph = load(m.save(m.with_if(), tmp_path / "if.onnx"))
    nest = Nesting(graph, "if.onnx")
    at = graph.index.node_position
    assert nest.role[at("branch")] == "holder"
    assert nest.scope[at("t_add")] == (at("branch"), "then_branch")
    assert nest.ordered(TOP) == [at("branch")]
    reads, _ = nest.deep_io(at("branch"))
    assert [graph.tensors[t].id for t in reads] == ["c", "x", "one"]  # bodies read outer x


def test_a_cycle_is_named() -> None:
    graph = _json_graph(Node("a", "Relu", [0], [1]), Node("b", "Relu", [1], [0]))
    with pytest.raises(FormatError, match="cycle") as e:
        Nesting(graph, "f").ordered(TOP)
    assert e.value.place == "node 'a'"


def test_a_stale_shape_gives_way_to_the_inferred_one() -> None:
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="r"),
            helper.make_node("Neg", ["h"], ["y"], name="n"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, ["N", 5])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert sorted(replace_stale_types(model)) == ["h", "y"]
    onnx.checker.check_model(model, full_check=True)


def _held_aside(model: onnx.ModelProto) -> list[tuple[onnx.GraphProto, list[onnx.ValueInfoProto]]]:
    kept = [onnx.ValueInfoProto.FromString(vi.SerializeToString()) for vi in model.graph.value_info]
    del model.graph.value_info[:]
    return [(model.graph, kept)]


def _matmul_model(declared_h: list[object]) -> onnx.ModelProto:
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4, 5], [0.0] * 20)
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="r"),
            helper.make_node("MatMul", ["h", "w"], ["y"], name="m"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "K"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [weight],
        value_info=[helper.make_tensor_value_info("h", TensorProto.FLOAT, declared_h)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_strict_inference_stands_for_the_full_check_only_when_types_are_as_inferred() -> None:
    same = _matmul_model(["N", "K"])
    settled = settle_types(same, _held_aside(same))
    assert settled.checked and settled.stale == []
    assert [vi.name for vi in same.graph.value_info] == ["h"]  # added back after inference
    # A declared shape that says more than inference finds (2x3 against Nx4 for MatMul's
    # weight) is kept, and only the full check, which sees it, refuses the model.
    more = _matmul_model([2, 3])
    settled = settle_types(more, _held_aside(more))
    assert not settled.checked and settled.stale == []
    with pytest.raises(onnx.shape_inference.InferenceError):
        onnx.checker.check_model(more, full_check=True)


def test_the_sidecar_keeps_what_the_file_has_no_field_for() -> None:
    graph = _json_graph(
        Node("a", "Relu", [0], [1], {}, {"name": "a", "perf": {"cpu": 1.0}, "parent_id": "g"}),
    )
    graph.metadata = {"ir_version": 8, "owner": "me"}
    graph.tensors[1].metadata = {"shape_symbols": ["N"], "note": "x"}
    fields = frozenset({"name", "parent_id"})
    text = pack(graph, {0: fields}, [0, 1], ["a"])
    assert text is not None
    back = _json_graph(Node("a", "Relu", [0], [1], {}, {"name": "a"}))
    back.metadata = {"ir_version": 8}
    restore(back, json.loads(text))
    assert back.metadata == {"ir_version": 8, "owner": "me"}
    assert back.nodes[0].metadata == {"perf": {"cpu": 1.0}}  # its name was the writer's
    assert back.tensors[1].metadata == {"note": "x"}


def test_someone_elses_entry_of_that_name_stays_a_prop(tmp_path: Path) -> None:
    model = m.mlp()
    helper.set_model_props(model, {KEY: "not json"})
    graph = load(m.save(model, tmp_path / "mlp.onnx"))
    assert graph.metadata["metadata_props"]["xocview"] == {"metadata": "not json"}
