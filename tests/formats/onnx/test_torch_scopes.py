"""Dynamo exports name nodes flatly (``node_linear_3``) and record the module path in
metadata_props: the loader groups them by that path, as it groups ``/a/b/Op`` names. Nodes
that rewrites leave unnamed (splits, onnxruntime's fusions) join the scope of what they
replaced."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as oh

from xocview.formats import load
from xocview.formats.onnx.meta import torch_scopes
from xocview.model import Graph, Hierarchy


def _node(op: str, ins: list[str], outs: list[str], name: str, scopes: list[str]) -> onnx.NodeProto:
    node = oh.make_node(op, ins, outs, name=name)
    prop = node.metadata_props.add()
    prop.key, prop.value = "pkg.torch.onnx.name_scopes", repr(scopes)
    return node


def test_the_module_path_becomes_a_scoped_name() -> None:
    node = _node(
        "MatMul",
        ["a", "b"],
        ["c"],
        "node_linear",
        ["", "encoder", "encoder.layer.0", "encoder.layer.0.attention", "linear"],
    )
    assert torch_scopes(node) == "/encoder/layer.0/attention/linear"
    assert torch_scopes(oh.make_node("Relu", ["a"], ["b"])) == ""


def test_a_dynamo_export_opens_with_module_groups(tmp_path: Path) -> None:
    nodes = []
    prev = "x"
    for layer in range(2):
        base = ["", "encoder", f"encoder.layer.{layer}"]
        for k, (sub, op) in enumerate(
            (("attention", "Relu"), ("attention", "Neg"), ("mlp", "Abs"), ("mlp", "Sigmoid"))
        ):
            out = f"t{layer}_{k}"
            nodes.append(
                _node(
                    op,
                    [prev],
                    [out],
                    f"node_{op}_{layer}",
                    [*base, f"{base[-1]}.{sub}", op.lower()],
                )
            )
            prev = out
    nodes.append(oh.make_node("Identity", [prev], ["y"], name="node_out"))
    graph = oh.make_graph(
        nodes,
        "dynamo",
        [oh.make_tensor_value_info("x", T.FLOAT, [2])],
        [oh.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    path = tmp_path / "dynamo.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)]), str(path))
    g = load(path)
    h = Hierarchy(g)
    names = {str(g.nodes[i].metadata.get("name")): i for i in range(len(g.nodes)) if h.is_group[i]}
    assert {"encoder", "layer.0", "layer.1", "attention", "mlp"} <= set(names)
    by_name = {str(n.metadata.get("name")): i for i, n in enumerate(g.nodes)}
    relu = by_name["node_Relu_1"]
    chain = [str(g.nodes[a].metadata.get("name")) for a in h.ancestors(relu)]
    assert chain == ["attention", "layer.1", "encoder"]
    assert h.parent[by_name["node_out"]] == -1  # a node without a path stays at the top


def test_a_node_the_exporter_left_unscoped_joins_the_scope_around_it(tmp_path: Path) -> None:
    base = ["", "h.0", "h.0.attn"]
    nodes = [
        _node("Relu", ["x"], ["a"], "node_proj", [*base, "h.0.attn.c_attn", "linear"]),
        oh.make_node("Split", ["a"], ["q", "k"], axis=0, num_outputs=2, name="node_Split_9"),
        _node("Add", ["q", "k"], ["s"], "node_add", [*base, "add"]),
        _node("Neg", ["s"], ["t"], "node_neg", [*base, "neg"]),
        oh.make_node("Abs", ["t"], ["y"], name="node_abs"),  # feeds the output: stays on top
    ]
    graph = oh.make_graph(
        nodes,
        "g",
        [oh.make_tensor_value_info("x", T.FLOAT, [4])],
        [oh.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    path = tmp_path / "split.onnx"
    onnx.save(oh.make_model(graph, opset_imports=[oh.make_opsetid("", 18)]), str(path))
    g = load(path)
    h = Hierarchy(g)
    by_name = {str(n.metadata.get("name")): i for i, n in enumerate(g.nodes)}
    parent = h.parent[by_name["node_Split_9"]]
    assert parent >= 0 and g.nodes[parent].metadata.get("name") == "attn"
    assert h.parent[by_name["node_abs"]] == -1


_CONTRIB = Path(__file__).resolve().parents[2] / "data" / "contrib"


def _ancestry(g: Graph, h: Hierarchy, i: int) -> list[str]:
    return [str(g.nodes[a].metadata.get("name", g.nodes[a].id)) for a in h.ancestors(i)]


@pytest.mark.parametrize(
    ("name", "fused", "inside"),
    [
        # onnxruntime's optimizer keeps the output name of the last node a fusion replaced
        ("bert_optimized.onnx", "Attention_1", "layer.1"),
        ("bert_optimized.onnx", "SkipLayerNorm_AddBias_0", "layer.0"),
        ("bert_optimized.onnx", "Gelu_AddBias_1", "intermediate"),
        # its gpt2 fusions rename the values: the module path of the matrix read tells
        ("gpt2_optimized.onnx", "FullyConnect_MatMul_3", "h.1"),
        ("gpt2_optimized.onnx", "FastGelu_AddBias_0", "mlp"),
        ("gpt2_optimized.onnx", "FullyConnect_Add_3", "h.1"),  # its bias is h.0's (shared)
    ],
)
def test_fused_nodes_are_drawn_inside_the_layer_they_replaced(
    name: str, fused: str, inside: str
) -> None:
    g = load(_CONTRIB / name)
    h = Hierarchy(g)
    by_name = {str(n.metadata.get("name")): i for i, n in enumerate(g.nodes)}
    assert inside in _ancestry(g, h, by_name[fused])
    tops = [g.nodes[i].op_type for i in range(len(g.nodes)) if h.parent[i] < 0]
    assert tops.count("Attention") == 0 and tops.count("FastGelu") == 0
