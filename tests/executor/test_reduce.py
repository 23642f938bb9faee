"""Reduction kernels against onnxruntime: both axes conventions, noop, empty axes, ties."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours
from tests.executor.test_shape import i64, rand

REDUCE = [
    "ReduceSum",
    "ReduceMean",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
]
AXES = [None, [1], [-1, 0], [0, 1, 2]]


def _new_opset(op: str) -> int:
    return 13 if op == "ReduceSum" else 18


def _data(op: str, dtype: type, *shape: int) -> np.ndarray:
    x = rand(*shape, dtype=dtype)
    if op == "ReduceLogSum":
        x = np.abs(x) + 1  # a positive sum keeps the log finite
    return np.asarray(x, dtype=dtype)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", AXES)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_axes_input(op: str, axes: list[int] | None, keepdims: int) -> None:
    x = _data(op, np.float32, 3, 4, 5)
    inputs = [x] if axes is None else [x, i64(*axes)]
    check_op(op, inputs, {"keepdims": keepdims}, opset=_new_opset(op))


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", AXES)
def test_reduce_axes_attribute(op: str, axes: list[int] | None) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_op(op, [_data(op, np.float64, 2, 3, 4)], attrs, opset=_new_opset(op) - 1)


@pytest.mark.parametrize("op", REDUCE)
def test_reduce_noop_with_empty_axes(op: str) -> None:
    """Only the reduction is skipped: ReduceSumSquare still squares, ReduceLogSum still logs."""
    x = _data(op, np.float32, 2, 3)
    attrs = {"noop_with_empty_axes": 1}
    check_op(op, [x], attrs, opset=_new_opset(op))
    check_op(op, [x, np.zeros(0, np.int64)], attrs, opset=_new_opset(op))


INT_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1"]
INT_OPS += ["ReduceSumSquare"]


@pytest.mark.parametrize("op", INT_OPS)
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_reduce_integers(op: str, dtype: type) -> None:
    x = rand(3, 4, dtype=dtype)
    check_op(op, [x, i64(1)], {"keepdims": 0}, opset=_new_opset(op))
    check_op(op, [x], opset=_new_opset(op))


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_reduce_max_min_bool_from_opset20(op: str) -> None:
    check_op(op, [rand(3, 4, dtype=np.bool_), i64(0)], opset=20)


@pytest.mark.parametrize("op", REDUCE)
@pytest.mark.parametrize("axes", [[1], [0]])
def test_reduce_empty_input(op: str, axes: list[int]) -> None:
    """An empty reduced axis gives the identity (0, 1, -inf, inf...); an empty kept axis, empty."""
    check_op(op, [np.zeros((2, 0, 3), np.float32), i64(*axes)], opset=_new_opset(op))


def test_reduce_log_sum_exp_is_stable() -> None:
    x = np.array([[1000.0, 1000.0], [-np.inf, -np.inf]], np.float32)
    (y,) = ours("ReduceLogSumExp", [x, i64(1)], {"keepdims": 0}, opset=18)
    np.testing.assert_allclose(y, [1000 + np.log(2), -np.inf])


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [0, 1])
@pytest.mark.parametrize("last", [0, 1])
def test_arg_max_min(op: str, dtype: type, axis: int, keepdims: int, last: int) -> None:
    x = np.asarray(rand(3, 4, 5, dtype=np.int64) % 3, dtype=dtype)  # many ties
    attrs = {"axis": axis, "keepdims": keepdims, "select_last_index": last}
    check_op(op, [x], attrs, opset=13)


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
def test_arg_max_min_old_opset(op: str) -> None:
    check_op(op, [rand(3, 4)], {"axis": 1, "keepdims": 0}, opset=9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize(
    ("shape", "axis", "k"), [((4, 9), -1, 3), ((6, 3, 2), 0, 6), ((5, 7), 1, 0)]
)
def test_top_k(dtype: type, largest: int, shape: tuple, axis: int, k: int) -> None:
    x = np.asarray(rand(*shape, dtype=np.int64) % 4, dtype=dtype)  # ties everywhere
    attrs = {"axis": axis, "largest": largest, "sorted": 1}
    check_op("TopK", [x, i64(k)], attrs, opset=11, num_outputs=2)


def test_top_k_old_opsets_and_empty_rows() -> None:
    x = rand(3, 8)
    check_op("TopK", [x], {"k": 2}, opset=9, num_outputs=2)
    check_op("TopK", [x, i64(5)], {"axis": 1}, opset=10, num_outputs=2)
    check_op("TopK", [rand(0, 8), i64(2)], {}, opset=11, num_outputs=2)


def test_top_k_unsorted_picks_the_same_elements() -> None:
    x = rand(4, 10)
    values, indices = ours("TopK", [x, i64(4)], {"sorted": 0}, opset=11, num_outputs=2)
    best = np.sort(x, axis=1)[:, ::-1][:, :4]
    np.testing.assert_array_equal(np.sort(values, axis=1)[:, ::-1], best)
    np.testing.assert_array_equal(np.take_along_axis(x, indices, 1), values)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cum_sum(dtype: type, axis: int, exclusive: int, reverse: int) -> None:
    attrs = {"exclusive": exclusive, "reverse": reverse}
    check_op("CumSum", [rand(3, 4, dtype=dtype), np.array(axis, np.int32)], attrs, opset=14)


def test_cum_sum_empty_and_opset11() -> None:
    check_op("CumSum", [rand(0, 3), i64(1)], {"exclusive": 1}, opset=14)
    check_op("CumSum", [rand(5), np.array(0, np.int64)], {"reverse": 1}, opset=11)
