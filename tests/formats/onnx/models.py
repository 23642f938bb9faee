"""Small ONNX models built in code for the loader tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, str(path))
    return path


def mlp(with_value_info: bool = True) -> onnx.ModelProto:
    """x[N,4] -> MatMul(W) -> Add(b) -> Relu -> y; W and b initializers, symbolic batch."""
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "W")
    b = numpy_helper.from_array(np.ones(3, dtype=np.float32), "b")
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["h"], name="/encoder/fc/MatMul"),
        helper.make_node("Add", ["h", "b"], ["h2"], name="/encoder/fc/Add", doc_string="bias"),
        helper.make_node("Relu", ["h2"], ["y"], name="/encoder/act/Relu"),
        helper.make_node("Identity", ["y"], ["z"], name="/head/Identity"),
        helper.make_node("Identity", ["z"], ["z2"], name="/head/Identity2"),
    ]
    value_info = [helper.make_tensor_value_info("h", F, ["N", 3])] if with_value_info else []
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", F, ["N", 4])],
        [helper.make_tensor_value_info("z2", F, ["N", 3])],
        initializer=[w, b],
        value_info=value_info,
        doc_string="a tiny mlp",
    )
    model = helper.make_model(
        graph,
        producer_name="tests",
        producer_version="1.0",
        opset_imports=[helper.make_opsetid("", 17)],
    )
    helper.set_model_props(model, {"author": "xocview", "quant.scheme": "none"})
    return model


def with_function() -> onnx.ModelProto:
    """Two calls of a model-local function 'Swish' (x * sigmoid(x))."""
    fn = helper.make_function(
        "custom",
        "Swish",
        ["X"],
        ["Y"],
        [helper.make_node("Sigmoid", ["X"], ["S"]), helper.make_node("Mul", ["X", "S"], ["Y"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    nodes = [
        helper.make_node("Swish", ["x"], ["a"], name="swish1", domain="custom"),
        helper.make_node("Swish", ["a"], ["y"], name="swish2", domain="custom"),
    ]
    graph = helper.make_graph(
        nodes,
        "fn",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    return helper.make_model(
        graph,
        functions=[fn],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
    )


def with_if() -> onnx.ModelProto:
    """y = If(c) then x + 1 else x - 1."""
    one = numpy_helper.from_array(np.array([1.0], dtype=np.float32), "one")
    then_g = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["t_out"], name="t_add")],
        "then",
        [],
        [helper.make_tensor_value_info("t_out", F, [2])],
    )
    else_g = helper.make_graph(
        [helper.make_node("Sub", ["x", "one"], ["e_out"], name="e_sub")],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", F, [2])],
    )
    node = helper.make_node(
        "If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g
    )
    graph = helper.make_graph(
        [node],
        "if",
        [
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_value_info("x", F, [2]),
        ],
        [helper.make_tensor_value_info("y", F, [2])],
        initializer=[one],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def with_external_data(folder: Path, location: str = "weights.bin") -> onnx.ModelProto:
    """An MLP whose W is stored in an external file; returns the model (already saved)."""
    model = mlp()
    onnx.external_data_helper.convert_model_to_external_data(
        model, all_tensors_to_one_file=True, location=location, size_threshold=0
    )
    onnx.save(model, str(folder / "model.onnx"))
    return model


def custom_domain() -> onnx.ModelProto:
    """A node of an unknown domain: shape inference cannot type its output."""
    nodes = [
        helper.make_node("Fancy", ["x"], ["y"], name="f", domain="vendor.ops", alpha=0.5),
        helper.make_node("Relu", ["y"], ["z"], name="r"),
    ]
    graph = helper.make_graph(
        nodes,
        "custom",
        [helper.make_tensor_value_info("x", F, [1, 2])],
        [helper.make_tensor_value_info("z", F, None)],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("vendor.ops", 1)]
    )


def omitted_input() -> onnx.ModelProto:
    """Clip with its optional min omitted ("") and max given."""
    mx = numpy_helper.from_array(np.array(6.0, dtype=np.float32), "max")
    nodes = [helper.make_node("Clip", ["x", "", "max"], ["y"], name="clip")]
    graph = helper.make_graph(
        nodes,
        "clip",
        [helper.make_tensor_value_info("x", F, [3])],
        [helper.make_tensor_value_info("y", F, [3])],
        initializer=[mx],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def with_loop() -> onnx.ModelProto:
    """A Loop summing x three times; its body reads the outer 'x'."""
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", F, [2]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", F, [2]),
        ],
    )
    trip = numpy_helper.from_array(np.array(3, dtype=np.int64), "trip")
    cond = numpy_helper.from_array(np.array(True), "cond")
    zero = numpy_helper.from_array(np.zeros(2, dtype=np.float32), "zero")
    node = helper.make_node("Loop", ["trip", "cond", "zero"], ["sum"], name="loop", body=body)
    graph = helper.make_graph(
        [node],
        "loop",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("sum", F, [2])],
        initializer=[trip, cond, zero],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def nested_functions() -> onnx.ModelProto:
    """Function 'Outer' calls function 'Inner' (x + x); the graph calls Outer once."""
    inner = helper.make_function(
        "custom",
        "Inner",
        ["A"],
        ["B"],
        [helper.make_node("Add", ["A", "A"], ["B"])],
        opset_imports=[helper.make_opsetid("", 17)],
    )
    outer = helper.make_function(
        "custom",
        "Outer",
        ["X"],
        ["Y"],
        [
            helper.make_node("Inner", ["X"], ["T"], domain="custom"),
            helper.make_node("Relu", ["T"], ["Y"]),
        ],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
    )
    graph = helper.make_graph(
        [helper.make_node("Outer", ["x"], ["y"], name="call", domain="custom")],
        "nested",
        [helper.make_tensor_value_info("x", F, [2])],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    return helper.make_model(
        graph,
        functions=[inner, outer],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("custom", 1)],
    )
