"""Constant, ConstantOfShape, Range, EyeLike, Cast, CastLike, Identity and Dropout kernels."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from onnx import helper

from tests.executor.ort_reference import FLOATS, INTS, check_op, ort_run, ours

NUMERIC = [*FLOATS, *INTS, "bool"]


def rand(shape: tuple[int, ...], dtype: str, low: float = 0, high: float = 100, seed: int = 0):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    return rng.uniform(low, high, size=shape).astype(dtype)


def code(dtype: str) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


@pytest.mark.parametrize(
    "value",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array(7, np.int64),
        np.array([True, False]),
        np.zeros((0, 2), np.float16),
        np.array(["ab", "c"], dtype=object),
    ],
)
@pytest.mark.parametrize("opset", [9, 13])
def test_constant_value(value: np.ndarray, opset: int) -> None:
    check_op("Constant", [], {"value": value}, opset=opset)


@pytest.mark.parametrize(
    "attrs",
    [
        {"value_float": 1.5},
        {"value_floats": [1.5, -2.0]},
        {"value_int": -3},
        {"value_ints": [1, 2, 3]},
        {"value_string": "hello"},
        {"value_strings": ["a", "bc"]},
    ],
)
def test_constant_scalar_attributes(attrs: dict[str, Any]) -> None:
    check_op("Constant", [], attrs, opset=13)


def test_constant_refuses_sparse_and_ambiguous_values() -> None:
    with pytest.raises(ValueError, match="sparse_value is not supported"):
        ours("Constant", [], {"sparse_value": object()})
    with pytest.raises(ValueError, match="exactly one"):
        ours("Constant", [], {"value_int": 1, "value_float": 2.0})
    with pytest.raises(ValueError, match="exactly one"):
        ours("Constant", [], {})
    (got,) = ours("Constant", [], {"value_strings": [b"x", "y"]})
    assert got.tolist() == ["x", "y"]


@pytest.mark.parametrize("shape", [[2, 3], [], [0, 3], [1, 1, 4]])
@pytest.mark.parametrize(
    "value", [None, np.array([2.5], np.float64), np.array([-3], np.int8), np.array([True])]
)
@pytest.mark.parametrize("opset", [9, 20])
def test_constant_of_shape(shape: list[int], value: np.ndarray | None, opset: int) -> None:
    attrs = {} if value is None else {"value": value}
    check_op("ConstantOfShape", [np.array(shape, np.int64)], attrs, opset=opset)


INT_RANGES = [(0, 10, 3), (10, 4, -2), (3, 9, 3), (5, 5, 1), (5, 1, 1)]
FLOAT_RANGES = [*INT_RANGES, (-2.5, 4.1, 0.7), (1, -1, -0.25)]
RANGE_CASES = [
    (dtype, *bounds)
    for dtype in ["float32", "float64", "int16", "int32", "int64"]
    for bounds in (FLOAT_RANGES if dtype.startswith("float") else INT_RANGES)
]


@pytest.mark.parametrize(("dtype", "start", "limit", "delta"), RANGE_CASES)
def test_range(dtype: str, start: float, limit: float, delta: float) -> None:
    check_op("Range", [np.array(v, dtype) for v in (start, limit, delta)], opset=11)


def test_range_float16_stash_type() -> None:
    args = [np.array(v, np.float16) for v in (0, 50, 0.3)]
    check_op("Range", args, opset=27, rtol=2e-3, atol=2e-2)
    with pytest.raises(ValueError, match="delta is 0"):
        ours("Range", [np.array(0), np.array(5), np.array(0)])


@pytest.mark.parametrize("src", NUMERIC)
@pytest.mark.parametrize("dst", NUMERIC)
def test_cast_numeric(src: str, dst: str) -> None:
    check_op("Cast", [rand((3, 4), src)], {"to": code(dst)}, rtol=1e-3, atol=1e-3)


def test_cast_edges() -> None:
    x = np.array([-1.5, -0.0, 2.9, -7.7, 1e6, 0.0, np.inf, np.nan], np.float32)
    for dst in ["int32", "int64", "bool", "float16", "float64"]:
        check_op("Cast", [x[:6] if "int" in dst else x], {"to": code(dst)})
    wide = np.array([200, -129, 70000, -1], np.int64)  # integers wrap
    for dst in ["int8", "uint8", "int16", "uint32"]:
        check_op("Cast", [wide], {"to": code(dst)})
    check_op("Cast", [np.zeros((0, 3), np.float32)], {"to": code("int8")})
    check_op("Cast", [np.array(3.5, np.float64)], {"to": code("float32")})


@pytest.mark.parametrize("opset", [6, 9, 13, 19, 21])
def test_cast_versions(opset: int) -> None:
    # onnxruntime refuses `saturate` unless the target is a float8 type (see the float8 test)
    check_op("Cast", [rand((2, 3), "float32", -50, 50)], {"to": code("int32")}, opset=opset)
    (got,) = ours("Cast", [rand((2, 3), "float32")], {"to": code("int32"), "saturate": 0})
    assert got.dtype == np.int32


def test_cast_opset_1_names_the_type() -> None:
    # opsets 1-5 spelled `to` as a string; onnx's shape inference rejects it, so no ORT here
    x = rand((2, 3), "float32", -50, 50)
    for name, dtype in [("INT32", np.int32), ("FLOAT16", np.float16), ("DOUBLE", np.float64)]:
        (got,) = ours("Cast", [x], {"to": name}, opset=1)
        np.testing.assert_array_equal(got, x.astype(dtype))
    with pytest.raises(ValueError, match="unknown ONNX data type"):
        ours("Cast", [x], {"to": "NOPE"}, opset=1)


@pytest.mark.parametrize("src", [*FLOATS, "int64", "uint8", "int8", "bool"])
def test_cast_to_string(src: str) -> None:
    x = rand((2, 3), src, -1000, 1000)
    if np.dtype(src).kind == "f":
        big = 60000.0 if src == "float16" else 123456789.0
        x = np.array([0.1, 1 / 3, 1e-7, np.nan, np.inf, -np.inf, -0.0, big], src)
    check_op("Cast", [x], {"to": code("object")})


@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "int64", "uint8"])
def test_cast_from_string(dst: str) -> None:
    words = ["1", "25", "7", "0"]
    if np.dtype(dst).kind == "f":
        words += ["1.5", "INF", "-inf", "+INF", "NaN", "1e-5", "-2E3"]
    check_op("Cast", [np.array(words, dtype=object)], {"to": code(dst)})


@pytest.mark.parametrize("saturate", [0, 1])
def test_cast_float8_matches_onnxruntime_bits(saturate: int) -> None:
    x = np.array([0.1, 500, 1e6, -1e6, np.inf, -np.inf, np.nan, 448, 460, 1e-9], np.float32)
    attrs = {"to": 17, "saturate": saturate}  # FLOAT8E4M3FN; ORT hands back raw bytes
    (expected,) = ort_run("Cast", [x], attrs, opset=19)
    (got,) = ours("Cast", [x], attrs, opset=19)
    assert got.dtype == ml_dtypes.float8_e4m3fn
    np.testing.assert_array_equal(got.view(np.uint8), expected)


def test_cast_bfloat16_and_unknown_types() -> None:
    x = np.array([1.0, 3.140625, -2.5e38], np.float32)
    (got,) = ours("Cast", [x], {"to": 16})
    assert got.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(got.astype(np.float32), x.astype(ml_dtypes.bfloat16))
    with pytest.raises(ValueError, match="unknown ONNX data type 99"):
        ours("Cast", [x], {"to": 99})


@pytest.mark.parametrize(
    ("src", "dst"),
    [("float32", "int64"), ("int32", "float16"), ("bool", "float64"), ("float64", "float64")],
)
@pytest.mark.parametrize("opset", [15, 19])
def test_cast_like(src: str, dst: str, opset: int) -> None:
    check_op("CastLike", [rand((2, 3), src), np.zeros((1,), dst)], opset=opset)


@pytest.mark.parametrize("dtype", [*NUMERIC, "object"])
@pytest.mark.parametrize("opset", [1, 13, 16])
def test_identity(dtype: str, opset: int) -> None:
    x = np.array(["a", "b"], dtype=object) if dtype == "object" else rand((2, 0, 3), dtype)
    check_op("Identity", [x], opset=opset)
    check_op("Identity", [rand((3,), "float32")], opset=opset)


@pytest.mark.parametrize("opset", [7, 10, 12, 13, 22])
@pytest.mark.parametrize("dtype", FLOATS)
def test_dropout_output_is_the_input(opset: int, dtype: str) -> None:
    x = rand((2, 3), dtype, -5, 5)
    check_op("Dropout", [x], opset=opset)
    out, mask = ours("Dropout", [x], opset=opset, num_outputs=2)
    np.testing.assert_array_equal(out, x)
    # the spec's inference mask keeps everything; onnxruntime returns zeros at opsets 7-11
    assert mask.shape == x.shape and mask.all()
    assert mask.dtype == (x.dtype if opset < 10 else np.bool_)
    if opset >= 12:
        check_op("Dropout", [x], opset=opset, num_outputs=2)


def test_dropout_ratio_and_training_mode_are_ignored() -> None:
    x = rand((4, 5), "float32")
    inputs = [x, np.array(0.3, np.float32), np.array(False)]
    check_op("Dropout", inputs, {"seed": 3}, opset=13, num_outputs=2)
    (got,) = ours("Dropout", [x], {"is_test": 1, "ratio": 0.2, "consumed_inputs": [0]}, opset=1)
    np.testing.assert_array_equal(got, x)


@pytest.mark.parametrize("shape", [(3, 3), (3, 5), (5, 2), (0, 3)])
@pytest.mark.parametrize("k", [0, 1, -2, 7])
@pytest.mark.parametrize("dtype_attr", [None, "float32", "int64", "bool"])
def test_eye_like(shape: tuple[int, int], k: int, dtype_attr: str | None) -> None:
    attrs: dict[str, Any] = {"k": k}
    if dtype_attr is not None:
        attrs["dtype"] = code(dtype_attr)
    if dtype_attr != "bool":
        check_op("EyeLike", [np.zeros(shape, np.int32)], attrs, opset=9)
    else:  # no bool kernel in onnxruntime
        (got,) = ours("EyeLike", [np.zeros(shape, np.int32)], attrs, opset=9)
        np.testing.assert_array_equal(got, np.eye(*shape, k=k, dtype=bool))
        assert got.dtype == np.bool_


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint64"])
def test_eye_like_input_dtypes(dtype: str) -> None:
    check_op("EyeLike", [rand((3, 4), dtype)], {"k": -1}, opset=22)
    with pytest.raises(ValueError, match="rank 3"):
        ours("EyeLike", [np.zeros((2, 2, 2), dtype)])
