"""Comparison and boolean kernels against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import BROADCAST_SHAPES, FLOATS, INTS, check_op, ours

COMPARISONS = ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"]
BOOLEAN = ["And", "Or", "Xor"]
SHAPES = BROADCAST_SHAPES


def rand(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    """Small random values, so equal pairs are common."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    return rng.integers(0, 4, size=shape).astype(dtype)


@pytest.mark.parametrize("op", COMPARISONS + BOOLEAN)
@pytest.mark.parametrize(("sa", "sb"), SHAPES)
def test_binary_broadcasting(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    dtype = "bool" if op in BOOLEAN else "float32"
    check_op(op, [rand(sa, dtype, 1), rand(sb, dtype, 2)])


@pytest.mark.parametrize("op", COMPARISONS)
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_comparison_dtypes(op: str, dtype: str) -> None:
    check_op(op, [rand((3, 4), dtype, 1), rand((4,), dtype, 2)], opset=16)


def test_comparisons_with_nan_and_bool_and_strings() -> None:
    a = np.array([np.nan, 1, np.inf, -0.0], np.float32)
    b = np.array([np.nan, np.nan, np.inf, 0.0], np.float32)
    for op in COMPARISONS:
        check_op(op, [a, b])
    check_op("Equal", [rand((3,), "bool", 1), rand((3,), "bool", 2)])
    words = np.array(["a", "b", ""], dtype=object)
    check_op("Equal", [words, np.array(["a", "c", ""], dtype=object)], opset=19)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater"])
@pytest.mark.parametrize("opset", [7, 9, 11, 13])
def test_comparison_versions(op: str, opset: int) -> None:
    dtype = "int32" if op == "Equal" else "float32"  # what opset 7 allowed each
    check_op(op, [rand((2, 3), dtype, 1), rand((3,), dtype, 2)], opset=opset)


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", *BOOLEAN])
def test_legacy_axis_broadcast(op: str) -> None:
    # onnxruntime has no kernels before opset 7: compare with B reshaped by hand
    dtype = "bool" if op in BOOLEAN else "int32"
    a, b = rand((2, 3, 4), dtype, 1), rand((3,), dtype, 2)
    (got,) = ours(op, [a, b], {"broadcast": 1, "axis": 1}, opset=1)
    np.testing.assert_array_equal(got, ours(op, [a, b[:, None]])[0])
    assert got.dtype == np.bool_


@pytest.mark.parametrize("shape", [(2, 3), (), (0, 4)])
def test_not(shape: tuple[int, ...]) -> None:
    check_op("Not", [rand(shape, "bool")])


WHERE_MISSING = ["int16", "uint16", "uint64", "bool"]  # no onnxruntime CPU kernel


@pytest.mark.parametrize("dtype", [*FLOATS, *INTS, "bool"])
def test_where_dtypes(dtype: str) -> None:
    cond, x, y = rand((3, 4), "bool", 3), rand((3, 4), dtype, 1), rand((4,), dtype, 2)
    if dtype not in WHERE_MISSING:
        check_op("Where", [cond, x, y], opset=16)
    else:
        (got,) = ours("Where", [cond, x, y], opset=16)
        np.testing.assert_array_equal(got, np.where(cond, x, y))
        assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize(
    "shapes",
    [
        ((2, 3), (2, 3), (2, 3)),
        ((3,), (2, 1), ()),
        ((), (2, 3), (3,)),
        ((1, 1, 1), (1, 4), (0, 1, 4)),
    ],
)
@pytest.mark.parametrize("opset", [9, 16])
def test_where_broadcasting(shapes: tuple[tuple[int, ...], ...], opset: int) -> None:
    c, x, y = shapes
    check_op(
        "Where", [rand(c, "bool", 3), rand(x, "float32", 1), rand(y, "float32", 2)], opset=opset
    )


def test_where_strings() -> None:
    x = np.array(["a", "b"], dtype=object)
    y = np.array(["x", "y"], dtype=object)
    check_op("Where", [np.array([True, False]), x, y], opset=16)


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, 3.0])


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("opset", [9, 13, 20])
def test_is_nan(dtype: str, opset: int) -> None:
    check_op("IsNaN", [SPECIAL.astype(dtype)], opset=opset)
    check_op("IsNaN", [np.zeros((0, 2), dtype)], opset=opset)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("negative", [0, 1])
@pytest.mark.parametrize("positive", [0, 1])
def test_is_inf(dtype: str, negative: int, positive: int) -> None:
    attrs = {"detect_negative": negative, "detect_positive": positive}
    check_op("IsInf", [SPECIAL.astype(dtype).reshape(2, 3)], attrs, opset=10)
    check_op("IsInf", [SPECIAL.astype(dtype)], attrs, opset=20)


def test_is_inf_float16_against_numpy() -> None:
    # onnxruntime's IsInf has no float16 kernel
    x = SPECIAL.astype(np.float16)
    np.testing.assert_array_equal(ours("IsInf", [x])[0], np.isinf(x))
    np.testing.assert_array_equal(ours("IsInf", [x], {"detect_positive": 0})[0], np.isneginf(x))
