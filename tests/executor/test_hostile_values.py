"""Valid protobufs with hostile values: every node that cannot compute ends the run in a
RunError that names the node, the value and what was expected, never a Python exception name."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from xocview.errors import RunError
from xocview.executor import run
from xocview.formats import load

# what must never reach a user: the names of Python's and numpy's exception classes
PYTHON = re.compile(
    r"\b(?:Attribute|Type|Key|Index|ZeroDivision|Value|Overflow|Recursion|Memory|Axis|"
    r"Runtime|Lookup|Arithmetic|Assertion|Name|NotImplemented|UFuncType|LinAlg)Error\b|"
    r"\bException\b|Traceback"
)


def f32(*shape: int) -> np.ndarray:
    return np.random.default_rng(0).random(shape, dtype=np.float32)


def i64(values: Any) -> np.ndarray:
    return np.asarray(values, np.int64)


def strings(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def _initializer(name: str, value: np.ndarray) -> onnx.TensorProto:
    if value.dtype == object:
        data = [str(v).encode() for v in value.reshape(-1)]
        return helper.make_tensor(name, TensorProto.STRING, value.shape, data)
    return numpy_helper.from_array(value, name)


def one_node(
    tmp_path: Path,
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any] | None = None,
    outputs: int = 1,
    opset: int = 17,
) -> Path:
    """A model of one node 'n1' whose inputs are initializers; its outputs of unknown type."""
    names = [f"in{k}" for k in range(len(inputs))]
    outs = [f"out{k}" for k in range(outputs)]
    node = helper.make_node(op, names, outs, name="n1", **(attrs or {}))
    graph = helper.make_graph(
        [node],
        "g",
        [],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outs],
        [_initializer(n, v) for n, v in zip(names, inputs, strict=True)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    path = tmp_path / "hostile.onnx"
    onnx.save(model, path)
    return path


X4, W4 = f32(1, 2, 5, 5), f32(2, 2, 3, 3)

# (case, op, inputs, attributes, outputs, opset, what the message must say)
CASES: list[tuple[str, str, list[np.ndarray], dict[str, Any], int, int, str]] = [
    (
        "conv stride 0",
        "Conv",
        [X4, W4],
        {"strides": [0, 1]},
        1,
        17,
        "attribute 'strides' is [0, 1]; expected every entry 1 or more",
    ),
    (
        "conv dilation 0",
        "Conv",
        [X4, W4],
        {"dilations": [0, 1]},
        1,
        17,
        "attribute 'dilations' is [0, 1]; expected every entry 1 or more",
    ),
    (
        "conv dilation -1",
        "Conv",
        [X4, W4],
        {"dilations": [-1, 1]},
        1,
        17,
        "attribute 'dilations' is [-1, 1]",
    ),
    (
        "conv negative pads",
        "Conv",
        [X4, W4],
        {"pads": [-9, 0, 0, 0]},
        1,
        17,
        "attribute 'pads' is [-9, 0, 0, 0]; expected every entry 0 or more",
    ),
    (
        "conv group 0",
        "Conv",
        [X4, W4],
        {"group": 0},
        1,
        17,
        "attribute 'group' is 0; expected 1 or more",
    ),
    (
        "conv transpose stride 0",
        "ConvTranspose",
        [X4, W4],
        {"strides": [0, 1]},
        1,
        17,
        "attribute 'strides' is [0, 1]",
    ),
    (
        "max pool window 0",
        "MaxPool",
        [X4],
        {"kernel_shape": [0, 2]},
        1,
        17,
        "attribute 'kernel_shape' is [0, 2]",
    ),
    (
        "average pool stride 0",
        "AveragePool",
        [X4],
        {"kernel_shape": [2, 2], "strides": [1, 0]},
        1,
        17,
        "attribute 'strides' is [1, 0]",
    ),
    ("lp pool p 0", "GlobalLpPool", [X4], {"p": 0}, 1, 17, "attribute 'p' is 0"),
    ("lrn size 0", "LRN", [X4], {"size": 0}, 1, 17, "attribute 'size' is 0"),
    (
        "depth to space 0",
        "DepthToSpace",
        [X4],
        {"blocksize": 0},
        1,
        17,
        "attribute 'blocksize' is 0",
    ),
    (
        "gather out of range",
        "Gather",
        [f32(3, 4), i64([7])],
        {},
        1,
        17,
        "index 7 is out of range for a dim of 3",
    ),
    (
        "gather negative out of range",
        "Gather",
        [f32(3, 4), i64([-9])],
        {},
        1,
        17,
        "index -9 is out of range",
    ),
    (
        "gather elements",
        "GatherElements",
        [f32(3, 4), i64([[9]])],
        {},
        1,
        17,
        "index 9 is out of range",
    ),
    ("gather nd", "GatherND", [f32(3, 4), i64([[9, 0]])], {}, 1, 17, "index 9 is out of range"),
    (
        "gather nd too many axes",
        "GatherND",
        [f32(3, 4), i64([[0, 0, 0]])],
        {},
        1,
        17,
        "index 3 axes of data of shape [3, 4]; expected 1 to 2",
    ),
    (
        "gather nd batch dims",
        "GatherND",
        [f32(3, 4), i64([[0]])],
        {"batch_dims": 9},
        1,
        17,
        "batch_dims 9",
    ),
    (
        "scatter nd",
        "ScatterND",
        [f32(3, 4), i64([[9]]), f32(1, 4)],
        {},
        1,
        17,
        "index 9 is out of range",
    ),
    (
        "scatter elements",
        "ScatterElements",
        [f32(3, 4), i64([[9]]), f32(1, 1)],
        {},
        1,
        17,
        "index 9 is out of range",
    ),
    (
        "one hot negative depth",
        "OneHot",
        [i64([1, 2]), i64(-3), f32(2)],
        {},
        1,
        17,
        "depth is [-3]",
    ),
    (
        "reshape impossible",
        "Reshape",
        [f32(3, 4), i64([5, -1])],
        {},
        1,
        17,
        "cannot reshape array of size 12",
    ),
    (
        "matmul on strings",
        "MatMul",
        [strings("a"), strings("b")],
        {},
        1,
        17,
        "input 0 is a tensor of strings; op 'MatMul' computes on numbers",
    ),
    ("add on strings", "Add", [f32(1), strings("a")], {}, 1, 17, "input 1 is a tensor of strings"),
    ("relu on strings", "Relu", [strings("a")], {}, 1, 17, "input 0 is a tensor of strings"),
    ("sum on strings", "ReduceSum", [strings("a", "b")], {}, 1, 17, "tensor of strings"),
    ("tile negative", "Tile", [f32(3, 4), i64([-1, 2])], {}, 1, 17, "negative dimensions"),
    ("expand mismatch", "Expand", [f32(3, 4), i64([5, 4])], {}, 1, 17, "cannot be broadcast"),
    ("split sizes", "Split", [f32(6, 4), i64([2, 2])], {}, 2, 17, "do not cut dim 6"),
    ("range delta 0", "Range", [i64(0), i64(10), i64(0)], {}, 1, 17, "delta is 0"),
    (
        "resize scale 0",
        "Resize",
        [X4, f32(0), np.array([1, 1, 0, 1], np.float32)],
        {},
        1,
        17,
        "scales are [1.0, 1.0, 0.0, 1.0]; expected finite numbers over 0",
    ),
    (
        "upsample scale 0",
        "Upsample",
        [X4, np.array([1, 1, 0, 1], np.float32)],
        {},
        1,
        9,
        "expected finite numbers over 0",
    ),
    ("top k over the axis", "TopK", [f32(3, 4), i64([9])], {}, 2, 17, "k=9 is out of range"),
    (
        "slice step 0",
        "Slice",
        [f32(3, 4), i64([0]), i64([3]), i64([0]), i64([0])],
        {},
        1,
        17,
        "step must not be 0",
    ),
    (
        "pad crops beyond the size",
        "Pad",
        [f32(3, 4), i64([-9, 0, 0, 0])],
        {"mode": "reflect"},
        1,
        17,
        "pads -9 and 0 on axis 0 of size 3 crop more than it has",
    ),
    (
        "constant of shape negative",
        "ConstantOfShape",
        [i64([-3, 2])],
        {},
        1,
        17,
        "negative dimensions",
    ),
    ("softmax axis", "Softmax", [f32(3, 4)], {"axis": 9}, 1, 17, "axis 9 is out of range"),
    ("log softmax axis", "LogSoftmax", [f32(3, 4)], {"axis": -9}, 1, 17, "axis -9 is out of"),
    ("softmax 1 axis", "Softmax", [f32(3, 4)], {"axis": 9}, 1, 11, "axis 9 is out of range"),
    ("hardmax axis", "Hardmax", [f32(3, 4)], {"axis": 9}, 1, 17, "axis 9 is out of"),
    ("concat axis", "Concat", [f32(3, 4), f32(3, 4)], {"axis": 9}, 1, 17, "axis 9 is out of"),
    ("flatten axis", "Flatten", [f32(3, 4)], {"axis": 9}, 1, 17, "axis 9 is out of range"),
    (
        "layer norm axis",
        "LayerNormalization",
        [f32(3, 4), f32(4), f32(4)],
        {"axis": 9},
        1,
        17,
        "axis 9 is out of range",
    ),
    ("mvn axes", "MeanVarianceNormalization", [X4], {"axes": [9]}, 1, 17, "axis 9 is out of"),
    ("transpose perm", "Transpose", [f32(3, 4)], {"perm": [0, 5]}, 1, 17, "axis 5 is out of"),
    ("cumsum axis", "CumSum", [f32(3, 4), i64(9)], {}, 1, 17, "axis 9 is out of range"),
    ("unsqueeze axis", "Unsqueeze", [f32(3, 4), i64([9])], {}, 1, 17, "axis 9 is out of range"),
    ("reduce axis", "ReduceMean", [f32(3, 4)], {"axes": [9]}, 1, 13, "axis 9 is out of range"),
]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "outputs", "opset", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_a_hostile_value_names_the_node_and_no_python_exception(
    tmp_path: Path,
    op: str,
    inputs: list[np.ndarray],
    attrs: dict[str, Any],
    outputs: int,
    opset: int,
    expected: str,
) -> None:
    path = one_node(tmp_path, op, inputs, attrs, outputs, opset)
    with pytest.raises(RunError) as info:
        run(load(path))
    message = str(info.value)
    assert message.startswith(f"node 'n1' ({op}): "), message
    assert expected in message
    assert PYTHON.search(message) is None, message
    assert info.value.node_id == "n1"


def test_strings_still_run_through_the_ops_that_take_them(tmp_path: Path) -> None:
    path = one_node(tmp_path, "Concat", [strings("a", "b"), strings("c")], {"axis": 0})
    out = run(load(path)).outputs["out0"]
    assert [str(v) for v in out] == ["a", "b", "c"]


def test_pads_may_still_crop_within_the_size(tmp_path: Path) -> None:
    x = f32(3, 4)
    path = one_node(tmp_path, "Pad", [x, i64([-1, 0, 0, 0])])
    np.testing.assert_array_equal(run(load(path)).outputs["out0"], x[1:])
