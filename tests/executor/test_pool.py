"""Pooling kernels against onnxruntime: every padding mode, ceil mode, dilations, Indices."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(7)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


WINDOWS_2D = [
    pytest.param({"kernel_shape": [3, 3]}, id="3x3"),
    pytest.param({"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, id="3x3s2p1"),
    pytest.param({"kernel_shape": [2, 3], "strides": [2, 1], "pads": [0, 1, 1, 2]}, id="asym"),
    pytest.param({"kernel_shape": [2, 2], "strides": [2, 2]}, id="2x2s2"),
    pytest.param({"kernel_shape": [3, 2], "auto_pad": "SAME_UPPER", "strides": [2, 2]}, id="su"),
    pytest.param({"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER", "strides": [2, 2]}, id="sl"),
    pytest.param({"kernel_shape": [3, 3], "auto_pad": "VALID", "strides": [2, 3]}, id="valid"),
    pytest.param({"kernel_shape": [1, 1], "strides": [2, 2]}, id="1x1s2"),
]
CEIL = [
    pytest.param({"ceil_mode": 1, "kernel_shape": [3, 3], "strides": [2, 2]}, id="ceil"),
    pytest.param(
        {"ceil_mode": 1, "kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        id="ceil-pads",
    ),
    pytest.param({"ceil_mode": 1, "kernel_shape": [2, 2], "strides": [3, 3]}, id="ceil-drop"),
    pytest.param({"dilations": [2, 2], "kernel_shape": [2, 3], "pads": [1, 1, 1, 1]}, id="dil"),
    pytest.param(
        {"ceil_mode": 1, "dilations": [2, 1], "kernel_shape": [2, 2], "strides": [2, 2]},
        id="ceil-dil",
    ),
]


@pytest.mark.parametrize("attrs", WINDOWS_2D + CEIL)
@pytest.mark.parametrize("num_outputs", [1, 2])
def test_max_pool_2d(attrs: dict[str, Any], num_outputs: int) -> None:
    check_op("MaxPool", [rand(2, 3, 10, 11)], attrs, opset=12, num_outputs=num_outputs)


@pytest.mark.parametrize("storage_order", [0, 1])
@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (1, 2, 5, 6, 7)])
def test_max_pool_indices_storage_order(storage_order: int, shape: tuple[int, ...]) -> None:
    attrs = {"kernel_shape": [2] * (len(shape) - 2), "strides": [2] * (len(shape) - 2)}
    check_op("MaxPool", [rand(*shape)], {**attrs, "storage_order": storage_order}, num_outputs=2)


@pytest.mark.parametrize("opset", [1, 7, 8, 10, 11])
def test_max_pool_old_opsets(opset: int) -> None:
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 1, 0]}
    check_op("MaxPool", [rand(1, 2, 9, 8)], attrs, opset=opset)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int8, np.uint8])
def test_max_pool_dtypes(dtype: Any) -> None:
    x = (rand(2, 3, 8, 8) * 50).astype(dtype)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    check_op("MaxPool", [x], attrs, opset=12)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3], "strides": [2], "pads": [1, 1]},
        {"kernel_shape": [2], "dilations": [3], "ceil_mode": 1, "strides": [2]},
    ],
)
def test_max_pool_1d(attrs: dict[str, Any]) -> None:
    check_op("MaxPool", [rand(2, 3, 13)], attrs, num_outputs=2)


def test_max_pool_3d() -> None:
    attrs = {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [0, 1, 1, 1, 1, 0]}
    check_op("MaxPool", [rand(1, 2, 5, 7, 6)], attrs, num_outputs=2)


def test_max_pool_empty_batch() -> None:
    check_op("MaxPool", [rand(0, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]})


@pytest.mark.parametrize("attrs", WINDOWS_2D + CEIL)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_2d(attrs: dict[str, Any], count_include_pad: int) -> None:
    attrs = {**attrs, "count_include_pad": count_include_pad}
    check_op("AveragePool", [rand(2, 3, 10, 11)], attrs, opset=19)


def test_average_pool_opset_1() -> None:
    """onnxruntime has no AveragePool-1; it means AveragePool-7 with count_include_pad 0."""
    x = rand(1, 2, 10, 9)
    attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    (expected,) = check_op("AveragePool", [x], attrs, opset=7)
    (got,) = ours("AveragePool", [x], attrs, opset=1)
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("opset", [7, 10, 11])
def test_average_pool_old_opsets(opset: int) -> None:
    attrs: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}
    if opset >= 7:
        attrs["count_include_pad"] = 1
    if opset >= 10:
        attrs["ceil_mode"] = 1
    check_op("AveragePool", [rand(1, 2, 10, 9)], attrs, opset=opset)


def test_average_pool_float16() -> None:
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    check_op("AveragePool", [rand(2, 3, 8, 8, dtype=np.float16)], attrs, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("op", ["AveragePool", "GlobalAveragePool"])
def test_average_pools_float64(op: str) -> None:
    """onnxruntime's CPU averages are float32 only: float64 must stay float64 and agree."""
    x = rand(2, 3, 8, 8)
    attrs = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]} if op == "AveragePool" else {}
    (expected,) = check_op(op, [x], attrs)
    (got,) = ours(op, [x.astype(np.float64)], attrs)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool_1d_3d(count_include_pad: int) -> None:
    check_op(
        "AveragePool",
        [rand(2, 3, 12)],
        {"kernel_shape": [4], "strides": [3], "pads": [2, 1], "count_include_pad": 1},
    )
    attrs = {"kernel_shape": [2, 3, 3], "pads": [1, 1, 0, 0, 1, 1], "strides": [2, 2, 1]}
    check_op("AveragePool", [rand(1, 2, 5, 6, 7)], {**attrs, "count_include_pad": 1})


@pytest.mark.parametrize(
    ("opset", "attrs"),
    [
        (2, {"kernel_shape": [3, 3], "p": 2}),
        (11, {"kernel_shape": [2, 3], "p": 3, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
        (18, {"kernel_shape": [3, 3], "p": 1, "strides": [2, 2], "ceil_mode": 1}),
        (18, {"kernel_shape": [2, 2], "p": 2, "dilations": [2, 2], "pads": [1, 0, 0, 1]}),
    ],
)
def test_lp_pool(opset: int, attrs: dict[str, Any]) -> None:
    check_op("LpPool", [rand(2, 3, 9, 8)], attrs, opset=opset)


def test_pool_same_with_dilations_follows_the_spec() -> None:
    """onnxruntime sizes SAME padding from the undilated kernel (9 -> 8 here); the spec keeps
    ceil(9 / 1) = 9 with total padding (9 - 1) * 1 + span 3 - 9 = 2, split 1 and 1."""
    x = rand(2, 3, 9, 9)
    attrs = {"kernel_shape": [2, 2], "p": 2, "dilations": [2, 2]}
    (expected,) = check_op("LpPool", [x], {**attrs, "pads": [1, 1, 1, 1]}, opset=18)
    (got,) = ours("LpPool", [x], {**attrs, "auto_pad": "SAME_UPPER"}, opset=18)
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    (got,) = ours(
        "MaxPool", [x], {"kernel_shape": [2, 2], "dilations": [2, 2], "auto_pad": "SAME_LOWER"}
    )
    assert got.shape == (2, 3, 9, 9)


@pytest.mark.parametrize("op", ["GlobalAveragePool", "GlobalMaxPool"])
@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 3, 5, 6), (1, 2, 3, 4, 5)])
def test_global_pools(op: str, shape: tuple[int, ...]) -> None:
    check_op(op, [rand(*shape)], {})


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool(p: int) -> None:
    check_op("GlobalLpPool", [rand(2, 3, 5, 6)], {"p": p})


def test_pool_result_is_not_the_input() -> None:
    """A 1x1 stride-1 pool must still return a fresh array the runtime may write into."""
    x = rand(1, 2, 3, 3)
    (y,) = ours("MaxPool", [x], {"kernel_shape": [1, 1]})
    assert not np.shares_memory(x, y)
    np.testing.assert_array_equal(x, y)


def test_pool_requires_kernel_shape() -> None:
    with pytest.raises(ValueError, match="kernel_shape"):
        ours("MaxPool", [rand(1, 2, 3, 3)], {})
