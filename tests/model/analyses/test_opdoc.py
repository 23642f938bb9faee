"""model/analyses/opdoc.py: roles and documentation from the ONNX operator schemas."""

from __future__ import annotations

from tests.model.conftest import chain, node
from xocview.model.analyses.opdoc import Formal, node_doc, op_doc, opset_of, roles


def test_conv_has_x_w_and_an_optional_b() -> None:
    doc = op_doc("Conv", "", 11)
    assert doc is not None
    assert [(f.name, f.option) for f in doc.inputs] == [
        ("X", "single"),
        ("W", "single"),
        ("B", "optional"),
    ]
    assert (doc.domain, doc.since_version) == ("ai.onnx", 11)
    assert doc.summary.startswith("The convolution operator consumes an input tensor")
    assert "\n" not in doc.summary


def test_the_version_follows_the_opset_and_unknown_ops_have_none() -> None:
    old, new = op_doc("Softmax", "ai.onnx", 11), op_doc("Softmax")
    assert old is not None and new is not None and old.since_version < new.since_version
    assert op_doc("MyFancyOp") is None
    assert op_doc("Conv", "", 0) is None  # no version that old


def test_roles_mind_omitted_and_variadic_inputs() -> None:
    resize = (Formal("X", "single"), Formal("roi", "optional"), Formal("scales", "optional"))
    resize += (Formal("sizes", "optional"),)
    assert roles(resize, 2, [1, 2]) == ["X", "sizes"]
    assert roles(resize, 5) == ["X", "roi", "scales", "sizes", ""]
    loop = (Formal("M", "optional"), Formal("cond", "optional"), Formal("v", "variadic"))
    assert roles(loop, 4) == ["M", "cond", "v[0]", "v[1]"]
    assert roles((), 2) == ["", ""]


def test_node_doc_reads_the_graphs_opset_and_the_nodes_domain() -> None:
    g = chain(2)
    g.metadata["opset_import"] = [{"domain": "ai.onnx", "version": 9}]
    assert opset_of(g) == 9 and opset_of(g, "com.microsoft") is None
    doc = node_doc(g, 1)  # Relu at opset 9
    assert doc is not None and doc.since_version == 6
    g.nodes[1] = node("n1", "Relu", [2], [3], domain="com.example")
    assert node_doc(g, 1) is None


def test_a_damaged_opset_version_gives_the_newest_schema_not_a_crash() -> None:
    doc = op_doc("Conv", "", 2**62)
    assert doc is not None and doc.op_type == "Conv"
    assert op_doc("Conv", "", -(2**40)) is None
