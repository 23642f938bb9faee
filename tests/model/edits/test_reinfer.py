"""Tests of xocview/model/edits/reinfer.py: after an edit, the types of everything it reaches
are inferred again (as a reopen of the saved file shows them), unknown where ONNX cannot tell,
and undo brings the old ones back exactly."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.formats import load, save
from xocview.formats.xoc import dumps
from xocview.model import Graph
from xocview.model import edits as E
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.model.edits import onnx_infer
from xocview.model.edits.steps import SetTypes


def _w(rng: np.random.Generator, name: str, shape: tuple[int, ...]) -> TensorProto:
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def conv_chain(path: Path, custom: bool = False) -> Path:
    """Stem Conv 7x7/2 -> Relu -> Conv 3x3 -> Add (skip) -> [custom op ->] MaxPool /2 ->
    Shape-computed Reshape -> GlobalAveragePool -> Flatten -> Gemm: a small ResNet-like chain,
    saved with the types ONNX infers."""
    rng = np.random.default_rng(0)
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    x = "a1"
    nodes = [
        helper.make_node(
            "Conv",
            ["x", "w0", "b0"],
            ["c0"],
            name="stem",
            strides=[2, 2],
            pads=[3] * 4,
            kernel_shape=[7, 7],
        ),
        helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
        helper.make_node("Conv", ["r0", "w1"], ["c1"], name="conv1", **conv),
        helper.make_node("Add", ["c1", "r0"], ["a1"], name="add"),
    ]
    if custom:
        nodes.append(helper.make_node("Mystery", ["a1"], ["m"], name="mystery", domain="x.y"))
        x = "m"
    nodes += [
        helper.make_node("MaxPool", [x], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Shape", ["p"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
        helper.make_node("Unsqueeze", ["n", "zero1"], ["n1"], name="unsq"),
        helper.make_node("Concat", ["n1", "rest"], ["target"], name="concat", axis=0),
        helper.make_node("Reshape", ["p", "target"], ["flat"], name="reshape"),
        helper.make_node("Relu", ["p"], ["pr"], name="relu_p"),
        helper.make_node("GlobalAveragePool", ["pr"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc"], ["y"], name="fc", transB=1),
    ]
    inits = [
        _w(rng, "w0", (8, 3, 7, 7)),
        _w(rng, "b0", (8,)),
        _w(rng, "w1", (8, 8, 3, 3)),
        _w(rng, "fc", (4, 8)),
        numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
        numpy_helper.from_array(np.array([0], dtype=np.int64), "zero1"),
        numpy_helper.from_array(np.array([-1], dtype=np.int64), "rest"),
    ]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("flat", TensorProto.FLOAT, None),
        ],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("x.y", 1)] if custom else [])
    model = helper.make_model(graph, opset_imports=opsets)
    if custom:  # as an exporter that knows its own op declares: ONNX cannot infer it
        model.graph.value_info.append(
            helper.make_tensor_value_info("m", TensorProto.FLOAT, [1, 8, 16, 16])
        )
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    onnx.save(model, str(path))
    return path


def shapes(g: Graph) -> dict[str, list[int]]:
    return {t.id: list(t.shape) for t in g.tensors}


def inferred_afresh(path: Path) -> dict[str, list[int]]:
    """What ONNX's whole-model inference gives the saved file's values without its types."""
    model = onnx.load(str(path))
    del model.graph.value_info[:]
    for vi in model.graph.output:
        vi.ClearField("type")
    model = onnx.shape_inference.infer_shapes(model, data_prop=True)
    return {
        vi.name: [
            d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim
        ]
        for vi in [*model.graph.value_info, *model.graph.output]
    }


def test_strides_edit_reaches_every_shape_and_flops_as_a_reopen(tmp_path: Path) -> None:
    g = load(conv_chain(tmp_path / "chain.onnx"))
    assert g.tensor("c0").shape == [1, 8, 16, 16] and g.tensor("flat").shape == [1, 512]
    flops_before = graph_flops_assuming(g, 1)[0]
    edit = E.set_attribute(g, "stem", "strides", [1, 1])
    after = shapes(g)
    assert after["c0"] == [1, 8, 32, 32] and after["a1"] == [1, 8, 32, 32]
    assert after["p"] == [1, 8, 16, 16]
    assert after["flat"] == [1, 2048]  # the Reshape's target came through Shape -> Concat
    assert after["g"] == [1, 8, 1, 1] and after["y"] == [1, 4]  # unchanged past the pooling
    save(g, tmp_path / "edited.onnx")
    fresh = inferred_afresh(tmp_path / "edited.onnx")
    for name, dims in fresh.items():
        assert after[name] == dims, name
    reopened = load(tmp_path / "edited.onnx")
    assert shapes(reopened) == after
    flops_after = graph_flops_assuming(g, 1)[0]
    assert flops_after == graph_flops_assuming(reopened, 1)[0]
    assert flops_after > 3.5 * flops_before  # the two convs now run on 4x the pixels
    assert isinstance(edit.steps[-1], SetTypes) or any(isinstance(s, SetTypes) for s in edit.steps)


def test_undo_restores_the_old_types_exactly_and_redo_the_new(tmp_path: Path) -> None:
    g = load(conv_chain(tmp_path / "chain.onnx"))
    before, text_before = copy.deepcopy(g), dumps(g)
    edit = E.set_attribute(g, "stem", "strides", [1, 1])
    text_after = dumps(g)
    assert text_after != text_before
    edit.revert(g)
    assert g == before and dumps(g) == text_before
    assert g.tensor("c0").shape == [1, 8, 16, 16]
    edit.apply(g)
    assert dumps(g) == text_after and g.tensor("c0").shape == [1, 8, 32, 32]
    edit.revert(g)
    assert dumps(g) == text_before


def test_an_op_onnx_does_not_know_makes_its_outputs_unknown(tmp_path: Path) -> None:
    g = load(conv_chain(tmp_path / "chain.onnx", custom=True))
    assert g.tensor("m").shape == [1, 8, 16, 16] and g.tensor("p").shape == [1, 8, 8, 8]
    before = dumps(g)
    E.set_attribute(g, "stem", "strides", [1, 1])
    m = g.tensor("m")
    assert m.metadata.get("rank_unknown") is True and m.shape == [] and m.dtype == "float32"
    p = g.tensor("p")  # MaxPool of a tensor of unknown rank: ONNX cannot tell its shape
    assert p.metadata.get("rank_unknown") is True or -1 in p.shape
    assert g.tensor("c0").shape == [1, 8, 32, 32]  # above the custom op: known
    assert dumps(g) != before


def test_a_path_stops_where_outputs_come_out_unchanged_and_reached_times_go(
    tmp_path: Path,
) -> None:
    g = load(conv_chain(tmp_path / "chain.onnx"))
    for nid in ("conv1", "gap", "flatten", "fc"):
        E.set_metadata(g, "performance.time.cpu", 1.5, node=nid)
    text_timed = dumps(g)
    edit = E.set_attribute(g, "stem", "strides", [1, 1])
    timed = {n.id for n in g.nodes if "performance" in n.metadata}
    # conv1 and the pooling were reached (their inputs grew): their times went; the gap's
    # output stayed [1, 8, 1, 1], so Flatten and Gemm were not reached and keep theirs
    assert timed == {"flatten", "fc"}
    edit.revert(g)
    assert dumps(g) == text_timed


def test_repeated_blocks_cost_one_inference_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(1)
    nodes, inits, x = [], [], "x"
    for i in range(40):
        inits.append(_w(rng, f"w{i}", (4, 4, 3, 3)))
        nodes += [
            helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1] * 4),
            helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"),
        ]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "blocks",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(onnx.shape_inference.infer_shapes(model), str(tmp_path / "blocks.onnx"))
    g = load(tmp_path / "blocks.onnx")
    onnx_infer.clear_memo()
    calls: list[str] = []
    real = onnx.shape_inference.infer_node_outputs

    def counted(schema, node, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(node.op_type)
        return real(schema, node, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_node_outputs", counted)
    edit = E.set_shape(g, "x", [1, 4, 16, 16])
    assert g.tensor(x).shape == [1, 4, 16, 16]
    assert calls == ["Conv"]  # 80 nodes, one question (a Relu passes its type on)
    changed = sum(len(s.positions) for s in edit.steps if isinstance(s, SetTypes))
    assert changed == 80


def test_a_dtype_change_reaches_ops_onnx_knows_and_unknown_ones(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Mystery", ["r"], ["m"], name="mystery", domain="x.y"),
        helper.make_node("Relu", ["m"], ["y"], name="relu2"),
    ]
    graph = helper.make_graph(
        nodes,
        "d",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        value_info=[
            helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("m", TensorProto.FLOAT, [2, 3]),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("x.y", 1)]
    )
    onnx.save(model, str(tmp_path / "d.onnx"))
    g = load(tmp_path / "d.onnx")
    E.set_dtype(g, "x", "float16")
    assert (g.tensor("r").dtype, g.tensor("r").shape) == ("float16", [2, 3])
    m = g.tensor("m")  # its input's dtype changed: nobody can say what it makes now
    assert m.dtype == "undefined" and m.metadata.get("rank_unknown") is True
    assert g.tensor("y").metadata.get("rank_unknown") is True


def test_bypass_reinfers_what_now_reads_the_input(tmp_path: Path) -> None:
    g = load(conv_chain(tmp_path / "chain.onnx"))
    edit = E.bypass_node(g, "pool")
    assert g.tensor("pr").shape == [1, 8, 16, 16]  # read the pool's input: twice the side
    assert g.tensor("flat").shape == [1, 2048]
    edit.revert(g)
    assert g.tensor("pr").shape == [1, 8, 8, 8]


def test_damaged_types_and_attributes_give_unknown_not_a_crash() -> None:
    from xocview.model import Node, Tensor

    tensors = [
        Tensor("x", "input", [1, 4], "float32"),
        Tensor("a", "activation", [1, 4], "float32", {"shape_symbols": [["b"], {"c": 1}]}),
        Tensor("b", "activation", [1, 4], "float32"),
        Tensor("c", "activation", [1, 4], "float32"),
        Tensor("w", "weight", [3, 3], "float32"),  # a weight of another shape: Gemm refuses
        Tensor("d", "activation", [1, 3], "float32"),
    ]
    nodes = [
        Node("relu", "Relu", [0], [1]),
        Node("odd", "Softmax", [1], [2], {"axis": {"not": "an int"}}),
        Node("neg", "Neg", [2], [3]),
        Node("gemm", "Gemm", [3, 4], [5]),
    ]
    g = Graph("g", "damaged", tensors, nodes, [0], [5])
    before = dumps(g)
    edit = E.set_shape(g, "x", [2, 4])
    assert g.tensor("a").shape == [2, 4] and "shape_symbols" not in g.tensor("a").metadata
    # an attribute ONNX cannot take: its outputs and what follows are unknown, not stale
    assert g.tensor("b").metadata == {"rank_unknown": True} and g.tensor("b").dtype == "float32"
    assert g.tensor("c").metadata.get("rank_unknown") is True
    assert g.tensor("d").metadata.get("rank_unknown") is True or -1 in g.tensor("d").shape
    edit.revert(g)
    assert dumps(g) == before


def test_a_reshape_target_from_a_constant_node_is_followed(tmp_path: Path) -> None:
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node(
            "Constant",
            [],
            ["target"],
            name="const",
            value=numpy_helper.from_array(np.array([-1, 2], dtype=np.int64)),
        ),
        helper.make_node("Reshape", ["r", "target"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes,
        "c",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(onnx.shape_inference.infer_shapes(model), str(tmp_path / "c.onnx"))
    g = load(tmp_path / "c.onnx")
    assert g.tensor("y").shape == [6, 2]
    E.set_shape(g, "x", [8, 3])
    assert g.tensor("y").shape == [12, 2]


def test_resnet50_stem_strides_as_the_issue_saw_them(tmp_path: Path) -> None:
    """Issue 30: the edge below the stem said 1x64x112x112 after strides [1, 1], and FLOPs
    went from 8.2 G to 32.9 G only after a reopen."""
    light = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"
    g = load(light / "light_resnet50.onnx")
    stem = next(n for n in g.nodes if n.op_type == "Conv")
    below = g.tensors[stem.outputs[0]]
    assert below.shape == [1, 64, 112, 112]
    assert round(graph_flops_assuming(g, 1)[0] / 1e9, 1) == 8.2
    edit = E.set_attribute(g, stem.id, "strides", [1, 1])
    assert below.shape == [1, 64, 224, 224]
    assert round(graph_flops_assuming(g, 1)[0] / 1e9, 1) == 32.9
    save(g, tmp_path / "edited.onnx")
    assert shapes(load(tmp_path / "edited.onnx")) == shapes(g)
    edit.revert(g)
    assert below.shape == [1, 64, 112, 112]
    assert round(graph_flops_assuming(g, 1)[0] / 1e9, 1) == 8.2
