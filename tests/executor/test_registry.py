"""The kernel table: version choice by opset, or by the node's form when a graph names none."""

from __future__ import annotations

import numpy as np
import pytest

from xocview.executor import run, supported_ops
from xocview.executor.registry import KERNELS, UnsupportedOp, kernel, lookup, lookup_fitting
from xocview.model import Graph, Node, Tensor


def test_the_newest_version_at_or_below_the_opset_is_chosen() -> None:
    assert lookup("Slice", 9).since == 1
    assert lookup("Slice", 10).since == 10
    assert lookup("Slice", 17).since == 10
    assert lookup("Slice").since == 10


def test_unknown_ops_and_too_old_opsets_are_refused_with_hints() -> None:
    with pytest.raises(UnsupportedOp, match=r"no kernel for op 'relu' \(did you mean Relu\?\)"):
        lookup("relu")
    with pytest.raises(UnsupportedOp, match="kernels start at opset 11"):
        lookup("Range", 9)


def test_another_domains_op_of_an_onnx_name_is_its_own() -> None:
    """onnxruntime's com.microsoft ops may share a name with ONNX's (Attention) but not its
    meaning: each is found only by its own domain, and a contrib op without one is refused."""

    @kernel("Relu", domain="com.microsoft")
    def contrib_relu(x: np.ndarray) -> np.ndarray:
        return x

    try:
        assert lookup("Relu", 1, "com.microsoft").fn is contrib_relu
        assert lookup("Relu", 14).fn is not contrib_relu
        assert lookup("Relu", 14, "ai.onnx").fn is not contrib_relu
        with pytest.raises(
            UnsupportedOp, match=r"no kernel for op 'Gemm' of domain 'com\.microsoft'"
        ):
            lookup("Gemm", 1, "com.microsoft")
    finally:
        KERNELS.pop("com.microsoft:Relu", None)


def test_without_an_opset_the_node_form_picks_the_version() -> None:
    """An attribute that later versions take as an input tells the version (XOC, NNVM files)."""
    assert lookup_fitting("Upsample", 1, ["mode", "scales"]).since == 7
    assert lookup_fitting("Upsample", 2, ["mode"]).since == 9
    assert lookup_fitting("ReduceMean", 1, ["axes", "keepdims"]).since == 1
    assert lookup_fitting("ReduceMean", 2, ["keepdims"]).since == 18


def test_a_graph_without_opset_runs_attribute_forms() -> None:
    tensors = [
        Tensor("x", "input", [1, 1, 2, 2], "float32"),
        Tensor("y", "output", [1, 1, 4, 4], "float32"),
    ]
    nodes = [Node("up", "Upsample", [0], [1], {"mode": "nearest", "scales": [1.0, 1.0, 2.0, 2.0]})]
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    y = run(Graph("g", "g", tensors, nodes, [0], [1]), {"x": x}).outputs["y"]
    np.testing.assert_array_equal(y, x.repeat(2, axis=2).repeat(2, axis=3))


def test_the_issue_list_of_ops_is_covered() -> None:
    wanted = [
        "Conv",
        "ConvTranspose",
        "Gemm",
        "MatMul",
        "BatchNormalization",
        "LayerNormalization",
        "InstanceNormalization",
        "Relu",
        "LeakyRelu",
        "PRelu",
        "Sigmoid",
        "Tanh",
        "Gelu",
        "Erf",
        "HardSwish",
        "HardSigmoid",
        "Clip",
        "Softmax",
        "LogSoftmax",
        "MaxPool",
        "AveragePool",
        "GlobalAveragePool",
        "GlobalMaxPool",
        "LRN",
        "Dropout",
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Equal",
        "Less",
        "Greater",
        "Pow",
        "Sqrt",
        "Exp",
        "Log",
        "Neg",
        "Abs",
        "Reciprocal",
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "Concat",
        "Split",
        "Slice",
        "Gather",
        "GatherElements",
        "Reshape",
        "Flatten",
        "Transpose",
        "Squeeze",
        "Unsqueeze",
        "Expand",
        "Tile",
        "Pad",
        "Shape",
        "Size",
        "Cast",
        "Where",
        "Not",
        "And",
        "Or",
        "Range",
        "ConstantOfShape",
        "Constant",
        "Identity",
        "Resize",
        "Einsum",
        "CumSum",
        "TopK",
        "ArgMax",
        "ArgMin",
        "LSTM",
        "GRU",
    ]
    assert set(wanted) - set(supported_ops()) == set()
