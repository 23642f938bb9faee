"""Indexing kernels against onnxruntime: Slice bounds, Gather*, Scatter*, NonZero, OneHot."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours
from tests.executor.test_shape import DTYPES, i64, rand

BIG, SMALL = np.iinfo(np.int64).max, np.iinfo(np.int64).min


@pytest.mark.parametrize(
    ("starts", "ends", "axes", "steps"),
    [
        ((1,), (3,), None, None),
        ((0, 1), (-1, BIG), (0, -1), None),
        ((-1,), (SMALL,), (1,), (-1,)),
        ((BIG, 0), (SMALL, BIG), (2, 0), (-2, 3)),
        ((5, -7), (1, 9), (1, 2), (-1, 2)),
        ((2,), (2,), (0,), (1,)),
        ((-100,), (100,), (-2,), (1,)),
        ((3,), (0,), (0,), (1,)),
    ],
)
def test_slice(starts: tuple, ends: tuple, axes: tuple | None, steps: tuple | None) -> None:
    x = rand(4, 6, 5)
    inputs = [x, i64(*starts), i64(*ends), None if axes is None else i64(*axes)]
    inputs += [None if steps is None else i64(*steps)]
    (y,) = check_op("Slice", inputs, opset=13)
    assert y.size == 0 or np.shares_memory(x, y)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_dtypes_int32_bounds_and_empty(dtype: type) -> None:
    ends = np.array([1, 2], np.int32)
    check_op("Slice", [rand(3, 4, dtype=dtype), np.array([0, -3], np.int32), ends], opset=11)
    check_op("Slice", [rand(0, 4, dtype=dtype), i64(0, 1), i64(2, 3)], opset=11)
    check_op("Slice", [rand(0, 4, dtype=dtype), i64(-1), i64(SMALL), i64(0), i64(-1)], opset=11)


@pytest.mark.parametrize(
    ("attrs"), [{"starts": [1, 0], "ends": [3, -1]}, {"starts": [-2], "ends": [BIG], "axes": [1]}]
)
def test_slice_opset1_attributes(attrs: dict) -> None:
    check_op("Slice", [rand(4, 5)], attrs, opset=9)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("axis", "indices"), [(0, [[0, -1], [2, 1]]), (-1, [3, -4, 0]), (1, 2)])
def test_gather(dtype: type, axis: int, indices: object) -> None:
    x = rand(3, 4, 4, dtype=dtype)
    check_op("Gather", [x, np.array(indices, np.int64)], {"axis": axis}, opset=13)
    check_op("Gather", [x, np.array(indices, np.int32)], {"axis": axis}, opset=11)


def test_gather_empty_and_out_of_range() -> None:
    check_op("Gather", [rand(3, 0), i64(2, 0)], {"axis": 0}, opset=13)
    check_op("Gather", [rand(3, 2), np.zeros((0, 2), np.int64)], {"axis": 0}, opset=13)
    with pytest.raises(IndexError, match="Gather: index 3"):
        ours("Gather", [rand(3, 2), i64(3)], opset=13)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements(dtype: type, axis: int) -> None:
    x = rand(3, 4, 5, dtype=dtype)
    dim = x.shape[axis]
    idx = RNG_INDICES.integers(-dim, dim, (2, 3, 4))
    check_op("GatherElements", [x, idx], {"axis": axis}, opset=13)


RNG_INDICES = np.random.default_rng(1)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize(
    ("data_shape", "indices", "batch_dims"),
    [
        ((3, 4), [[0, 1], [2, -1]], 0),
        ((3, 4, 2), [[1], [-3]], 0),
        ((2, 3, 4), [[[1, 2]], [[0, -1]]], 1),
        ((2, 3, 4), [[[1], [0]], [[2], [2]]], 1),
        ((2, 3, 4), [[[1], [2], [0]], [[0], [0], [3]]], 2),
    ],
)
def test_gather_nd(dtype: type, data_shape: tuple, indices: list, batch_dims: int) -> None:
    x = rand(*data_shape, dtype=dtype)
    check_op("GatherND", [x, np.array(indices, np.int64)], {"batch_dims": batch_dims}, opset=13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize(
    ("reduction", "opset"), [("none", 13), ("add", 16), ("mul", 16), ("max", 18), ("min", 18)]
)
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_elements(dtype: type, reduction: str, opset: int, axis: int) -> None:
    x = rand(4, 5, dtype=dtype)
    # distinct positions per column/row for "none" (duplicates' order is unspecified there)
    perm = np.argsort(RNG_INDICES.random((4, 5)), axis=axis)[:3] if axis == 0 else None
    if axis == 0:
        idx = perm
        upd = rand(3, 5, dtype=dtype)
    else:
        idx = np.argsort(RNG_INDICES.random((4, 5)), axis=1)[:, :3] - 5
        upd = rand(4, 3, dtype=dtype)
    if reduction != "none":
        idx = RNG_INDICES.integers(0, 4 if axis == 0 else 5, idx.shape)
    attrs = {"axis": axis} if reduction == "none" else {"axis": axis, "reduction": reduction}
    check_op("ScatterElements", [x, idx.astype(np.int64), upd], attrs, opset=opset)


def test_scatter_opset9() -> None:
    x = rand(3, 3)
    check_op("Scatter", [x, i64(1, 0, 2).reshape(1, 3), rand(1, 3)], {"axis": 0}, opset=9)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
@pytest.mark.parametrize(
    ("indices", "upd_shape"),
    [([[0], [2]], (2, 3, 4)), ([[1, 2], [0, -1]], (2, 4)), ([[[1, 1, 1]]], (1, 1))],
)
def test_scatter_nd(dtype: type, indices: list, upd_shape: tuple) -> None:
    x = rand(3, 3, 4, dtype=dtype)
    check_op("ScatterND", [x, np.array(indices, np.int64), rand(*upd_shape, dtype=dtype)], opset=13)


@pytest.mark.parametrize("reduction", ["add", "mul", "max", "min"])
def test_scatter_nd_reductions_accumulate_duplicates(reduction: str) -> None:
    x = rand(4, 2)
    check_op(
        "ScatterND", [x, i64(1, 1, 3).reshape(3, 1), rand(3, 2)], {"reduction": reduction}, opset=18
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("axis", "cond"), [(None, [1, 0, 1, 1]), (0, [0, 1]), (-1, [1, 0, 0, 1, 1]), (1, [0, 1])]
)
def test_compress(dtype: type, axis: int | None, cond: list[int]) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check_op("Compress", [rand(3, 5, dtype=dtype), np.array(cond, bool)], attrs, opset=11)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.int32, np.bool_])
@pytest.mark.parametrize("shape", [(3, 4), (5,), (2, 0, 3), ()])
def test_non_zero(dtype: type, shape: tuple) -> None:
    x = rand(*shape, dtype=dtype)
    if x.dtype.kind in "iu":
        x = np.asarray(x % 3)  # plenty of zeros
    check_op("NonZero", [x], opset=13)


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize(
    ("ind_dtype", "val_dtype", "depth_dtype"),
    [
        (np.int64, np.float32, np.int64),
        (np.int64, np.int64, np.int64),
        (np.int32, np.float32, np.int32),
        (np.float32, np.float32, np.float32),
    ],
)
def test_one_hot(axis: int, ind_dtype: type, val_dtype: type, depth_dtype: type) -> None:
    indices = np.array([[0, 3, -1], [5, -4, 2]], ind_dtype)  # 5 is out of range: an all-off row
    values = np.array([2, 7], val_dtype)
    check_op("OneHot", [indices, np.array([4], depth_dtype), values], {"axis": axis}, opset=11)


def test_gather_nd_and_scatter_nd_empty() -> None:
    check_op("GatherND", [rand(2, 3, 4), np.zeros((0, 2), np.int64)], opset=13)
    check_op("GatherND", [rand(0, 3, 4), np.zeros((0, 1), np.int64)], {"batch_dims": 1}, opset=13)
    check_op("ScatterND", [rand(2, 3), np.zeros((0, 1), np.int64), rand(0, 3)], opset=13)
