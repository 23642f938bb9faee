"""Quantization kernels against onnxruntime, and against the spec for rounding, saturation,
blocked scales and the refusals."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ort_run, ours
from xocview.executor.registry import lookup

RNG = np.random.default_rng(31)

QTYPES = ["int8", "uint8", "int16", "uint16"]


def rand(*shape: int, dtype: Any = np.float32, scale: float = 1.0) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape) * scale).astype(dtype)


def positive(*shape: int, dtype: Any = np.float32, low: float = 0.1) -> np.ndarray:
    """Scales: |normal| + low, as an array even when 0-d."""
    return np.asarray(np.abs(RNG.standard_normal(shape)) + low).astype(dtype)


def qrand(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, shape).astype(dtype)


def zero_points(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Zero points well inside the range, so both saturation ends are reachable."""
    info = np.iinfo(dtype)
    mid = (int(info.min) + int(info.max)) // 2
    span = (int(info.max) - int(info.min)) // 8
    return RNG.integers(mid - span, mid + span, shape).astype(dtype)


# --- QuantizeLinear / DequantizeLinear against onnxruntime ---------------------------------------


@pytest.mark.parametrize("dtype", [*QTYPES, None])
def test_quantize_per_tensor_matches_onnxruntime(dtype: str | None) -> None:
    x = rand(3, 4, 5, scale=300.0)
    scale = np.array(0.7, dtype=np.float32)
    zero = None if dtype is None else zero_points((), dtype)  # None: uint8
    check_op("QuantizeLinear", [x, scale, zero], opset=21)


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_quantize_per_axis_matches_onnxruntime(dtype: str, axis: int) -> None:
    x = rand(3, 4, 5, scale=200.0)
    n = x.shape[axis]
    scale = positive(n)
    check_op("QuantizeLinear", [x, scale, zero_points((n,), dtype)], {"axis": axis}, opset=21)


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize(("axis", "block"), [(0, 2), (1, 2), (1, 3), (2, 4)])
def test_quantize_blocked_matches_onnxruntime(dtype: str, axis: int, block: int) -> None:
    shape = [4, 6, 8]
    x = rand(*shape, scale=100.0)
    shape[axis] = -(-shape[axis] // block)
    scale = positive(*shape)
    attrs = {"axis": axis, "block_size": block}
    check_op("QuantizeLinear", [x, scale, zero_points(tuple(shape), dtype)], attrs, opset=21)


@pytest.mark.parametrize("dtype", QTYPES)
@pytest.mark.parametrize("scale_dtype", [np.float32, np.float16])
@pytest.mark.parametrize("axis", [None, 1])
def test_dequantize_matches_onnxruntime(dtype: str, scale_dtype: Any, axis: int | None) -> None:
    x = qrand((3, 4, 5), dtype)
    shape = () if axis is None else (x.shape[axis],)
    scale = positive(*shape, dtype=scale_dtype)
    attrs = {} if axis is None else {"axis": axis}
    check_op("DequantizeLinear", [x, scale, zero_points(shape, dtype)], attrs, opset=21)


@pytest.mark.parametrize("dtype", QTYPES)
def test_dequantize_blocked_matches_onnxruntime(dtype: str) -> None:
    x = qrand((4, 7), dtype)
    scale = positive(4, 3)
    attrs = {"axis": 1, "block_size": 3}
    check_op("DequantizeLinear", [x, scale, zero_points((4, 3), dtype)], attrs, opset=21)


def test_dequantize_int32_without_zero_point_matches_onnxruntime() -> None:
    x = RNG.integers(-(2**20), 2**20, (5, 6)).astype(np.int32)
    check_op("DequantizeLinear", [x, np.array(0.01, dtype=np.float32)], opset=13)


# --- QuantizeLinear / DequantizeLinear against the spec ------------------------------------------


def test_quantize_rounds_half_to_even_and_saturates() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1000.0, -1000.0, np.inf], dtype=np.float32)
    (y,) = ours("QuantizeLinear", [x, np.array(1.0, np.float32), np.array(0, np.int8)], opset=21)
    assert y.dtype == np.int8
    assert y.tolist() == [0, 2, 2, 0, -2, -2, 127, -128, 127]
    (u,) = ours("QuantizeLinear", [x, np.array(1.0, np.float32)], opset=10)
    assert u.dtype == np.uint8
    assert u.tolist() == [0, 2, 2, 0, 0, 0, 255, 0, 255]


def test_quantize_adds_zero_point_after_rounding() -> None:
    x = np.array([0.5, 1.5, -0.5], dtype=np.float32)
    (y,) = ours("QuantizeLinear", [x, np.array(1.0, np.float32), np.array(10, np.uint8)], opset=13)
    assert y.tolist() == [10, 12, 10]


def test_quantize_output_dtype_without_zero_point() -> None:
    x = np.array([[40000.0, -40000.0, 3.0]], dtype=np.float32)
    attrs = {"output_dtype": 5}  # INT16
    (y,) = ours("QuantizeLinear", [x, np.array(1.0, np.float32)], attrs, opset=21)
    assert y.dtype == np.int16
    assert y.tolist() == [[32767, -32768, 3]]


def test_quantize_blocked_short_last_block() -> None:
    x = np.arange(5, dtype=np.float32).reshape(1, 5) * 4
    scale = np.array([[1.0, 2.0, 4.0]], dtype=np.float32)
    attrs = {"axis": 1, "block_size": 2}
    (y,) = ours("QuantizeLinear", [x, scale, np.array([[0, 1, 2]], np.int8)], attrs, opset=21)
    assert y.tolist() == [[0, 4, 5, 7, 6]]


def test_quantize_precision_attribute_divides_in_float16() -> None:
    x = np.array([1.0009765625 * 3], dtype=np.float32)  # not representable in float16
    scale = np.array(1.0, np.float32)
    attrs = {"precision": 10, "output_dtype": 5}  # FLOAT16, INT16
    (y,) = ours("QuantizeLinear", [x * 1000, scale], attrs, opset=23)
    assert y.tolist() == [int(np.rint(np.float16(x[0] * 1000)))]


def test_dequantize_output_dtype() -> None:
    x = np.array([1, 2, 3], dtype=np.int8)
    scale = np.array(0.5, np.float32)
    (y,) = ours(
        "DequantizeLinear", [x, scale, np.array(1, np.int8)], {"output_dtype": 10}, opset=23
    )
    assert y.dtype == np.float16
    assert y.tolist() == [0.0, 0.5, 1.0]


def test_quantize_dequantize_versions_take_their_attributes() -> None:
    assert lookup("QuantizeLinear", 10).keywords == {}
    assert set(lookup("QuantizeLinear", 19).keywords or {}) == {"axis", "saturate"}
    assert "block_size" in (lookup("QuantizeLinear", 21).keywords or {})
    assert "precision" in (lookup("QuantizeLinear", 28).keywords or {})
    assert set(lookup("DequantizeLinear", 19).keywords or {}) == {"axis"}
    assert "output_dtype" in (lookup("DequantizeLinear", 28).keywords or {})


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "word"),
    [
        (
            "QuantizeLinear",
            [np.ones(3, np.float32), np.ones((), np.float32)],
            {"output_dtype": 99},
            "output_dtype",
        ),
        (
            "QuantizeLinear",
            [np.ones(3, np.float32), np.ones((), np.float32)],
            {"output_dtype": 1},
            "output type",
        ),
        (
            "QuantizeLinear",
            [np.ones(3, np.float32), np.ones((), np.float32)],
            {"precision": 6},
            "precision",
        ),
        ("QuantizeLinear", [np.ones(3, np.int64), np.ones((), np.float32)], {}, "x of dtype"),
        ("DequantizeLinear", [np.ones(3, np.int64), np.ones((), np.float32)], {}, "x of dtype"),
        (
            "DequantizeLinear",
            [np.ones(3, np.int8), np.ones((), np.float32)],
            {"output_dtype": 6},
            "output_dtype",
        ),
    ],
)
def test_refusals_name_what_is_not_supported(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any], word: str
) -> None:
    with pytest.raises(ValueError, match=f"^{op}: .*{word}.*not supported"):
        ours(op, list(inputs), attrs, opset=23)


def test_bad_scale_shapes_raise_value_error() -> None:
    x = np.ones((2, 4), np.float32)
    with pytest.raises(ValueError, match="y_scale has shape"):
        ours("QuantizeLinear", [x, np.ones(3, np.float32)], {"axis": 1}, opset=21)
    with pytest.raises(ValueError, match="y_scale has shape"):
        attrs = {"axis": 1, "block_size": 2}
        ours("QuantizeLinear", [x, np.ones((2, 3), np.float32)], attrs, opset=21)


# --- DynamicQuantizeLinear -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "x",
    [
        rand(3, 4, scale=5.0),
        np.abs(rand(10)) + 1,  # all positive: the range starts at 0
        -np.abs(rand(2, 5)) - 1,  # all negative
        np.zeros(4, np.float32),
    ],
)
def test_dynamic_quantize_matches_onnxruntime(x: np.ndarray) -> None:
    check_op("DynamicQuantizeLinear", [x.astype(np.float32)], opset=11, num_outputs=3)


def test_dynamic_quantize_refuses_float16() -> None:
    with pytest.raises(ValueError, match="DynamicQuantizeLinear: x of dtype float16 is not"):
        ours("DynamicQuantizeLinear", [np.ones(3, np.float16)], opset=11, num_outputs=3)


# --- Rank 0: a scalar x (QuantizeLinear clipped it to a numpy scalar and crashed) ---------------


@pytest.mark.parametrize("dtype", [*QTYPES, None])
@pytest.mark.parametrize("value", [3.3, 2.25, -1e6, 1e6])
def test_quantize_rank0_matches_onnxruntime(dtype: str | None, value: float) -> None:
    x = np.array(value, np.float32)  # 2.25 / 0.5 = 4.5 ties to 4; -1e6 and 1e6 saturate
    zero = None if dtype is None else zero_points((), dtype)
    (got,) = check_op("QuantizeLinear", [x, np.array(0.5, np.float32), zero], opset=21)
    assert isinstance(got, np.ndarray) and got.shape == ()


@pytest.mark.parametrize("dtype", QTYPES)
def test_dequantize_rank0_matches_onnxruntime(dtype: str) -> None:
    x, zero = qrand((), dtype), zero_points((), dtype)
    check_op("DequantizeLinear", [x, positive(), zero], opset=21)


@pytest.mark.parametrize("value", [3.3, -2.0, 0.0])
def test_dynamic_quantize_rank0_matches_onnxruntime(value: float) -> None:
    x = np.array(value, np.float32)
    check_op("DynamicQuantizeLinear", [x], opset=11, num_outputs=3)


# --- QLinearMatMul, ConvInteger, QLinearConv -----------------------------------------------------


def _close_to_onnxruntime(
    op: str, inputs: list[np.ndarray | None], attrs: dict[str, Any] | None, opset: int
) -> None:
    """Same shape and dtype; values within 1 (onnxruntime requantises in float32 with its own
    rounding of the multiplier), and equal for the vast majority."""
    (want,) = ort_run(op, inputs, attrs, opset=opset)
    (got,) = ours(op, inputs, attrs, opset=opset)
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max(initial=0) <= 1
    assert (diff == 0).mean() > 0.95


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("shapes", [((4, 6), (6, 5)), ((2, 3, 6), (6, 4)), ((2, 3, 6), (2, 6, 4))])
@pytest.mark.parametrize("opset", [10, 21])
def test_qlinear_matmul_matches_onnxruntime(
    dtype: str, shapes: tuple[tuple[int, ...], tuple[int, ...]], opset: int
) -> None:
    a, b = qrand(shapes[0], dtype), qrand(shapes[1], dtype)
    f = np.float32
    inputs: list[np.ndarray | None] = [
        a, np.array(0.02, f), zero_points((), dtype),
        b, np.array(0.03, f), zero_points((), dtype),
        np.array(0.5, f), zero_points((), dtype),
    ]  # fmt: skip
    _close_to_onnxruntime("QLinearMatMul", inputs, None, opset)


def test_qlinear_matmul_per_row_and_column() -> None:
    a, b = qrand((3, 4), "uint8"), qrand((4, 2), "uint8")
    a_scale, a_zero = np.array([0.1, 0.2, 0.3], np.float32), np.array([1, 2, 3], np.uint8)
    b_scale, b_zero = np.array([0.5, 0.25], np.float32), np.array([4, 5], np.uint8)
    y_scale, y_zero = np.array(2.0, np.float32), np.array(7, np.uint8)
    inputs = [a, a_scale, a_zero, b, b_scale, b_zero, y_scale, y_zero]
    (y,) = ours("QLinearMatMul", list(inputs), opset=21)
    real = (a - a_zero[:, None].astype(float)) @ (b - b_zero.astype(float))
    real *= a_scale[:, None] * b_scale / 2.0
    assert y.tolist() == np.clip(np.rint(real) + 7, 0, 255).astype(np.uint8).tolist()


CONV_CASES: list[dict[str, Any]] = [
    {},
    {"pads": [1, 1, 1, 1]},
    {"strides": [2, 2], "pads": [0, 1, 1, 0]},
    {"dilations": [2, 1], "group": 2},
    {"auto_pad": "SAME_UPPER"},
]


@pytest.mark.parametrize("attrs", CONV_CASES)
def test_conv_integer_matches_onnxruntime(attrs: dict[str, Any]) -> None:
    group = attrs.get("group", 1)
    x = qrand((2, 4, 7, 6), "uint8")
    w = qrand((6, 4 // group, 3, 3), "uint8")
    check_op(
        "ConvInteger", [x, w, np.array(120, np.uint8), zero_points((), "uint8")], attrs, opset=10
    )


def test_conv_integer_per_channel_w_zero_point() -> None:
    """onnxruntime takes only a scalar w_zero_point: each output channel of a per-channel one
    must equal onnxruntime's run with that channel's zero point."""
    x, w = qrand((1, 2, 5, 5), "uint8"), qrand((3, 2, 3, 3), "uint8")
    wz = zero_points((3,), "uint8")
    xz = np.array(100, np.uint8)
    (y,) = ours("ConvInteger", [x, w, xz, wz], {"pads": [1, 1, 1, 1]}, opset=10)
    for m in range(3):
        inputs = [x, w[m : m + 1], xz, np.asarray(wz[m])]
        (want,) = ort_run("ConvInteger", list(inputs), {"pads": [1, 1, 1, 1]}, opset=10)
        np.testing.assert_array_equal(y[:, m : m + 1], want)


def test_conv_integer_without_zero_points_is_plain_conv() -> None:
    x, w = qrand((1, 2, 5, 5), "int8"), qrand((3, 2, 2, 2), "int8")
    (y,) = ours("ConvInteger", [x, w], opset=10)
    assert y.dtype == np.int32
    want = np.zeros((1, 3, 4, 4), np.int64)
    for i in range(2):
        for j in range(2):
            want += np.einsum("nchw,mc->nmhw", x[:, :, i : i + 4, j : j + 4].astype(np.int64),
                              w[:, :, i, j].astype(np.int64))  # fmt: skip
    assert y.tolist() == want.tolist()


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
@pytest.mark.parametrize("attrs", CONV_CASES[:3])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_qlinear_conv_matches_onnxruntime(
    dtype: str, attrs: dict[str, Any], per_channel: bool, bias: bool
) -> None:
    x = qrand((1, 3, 6, 6), dtype)
    w = qrand((4, 3, 3, 3), "int8" if dtype == "int8" else "uint8")
    f = np.float32
    shape = (4,) if per_channel else ()
    w_scale = np.asarray(positive(*shape, low=0.5) / f(100))
    w_zero = np.zeros(shape, w.dtype) if dtype == "int8" else zero_points(shape, "uint8")
    inputs: list[np.ndarray | None] = [
        x, np.array(0.05, f), zero_points((), dtype),
        w, w_scale, w_zero,
        np.array(0.4, f), zero_points((), dtype),
        RNG.integers(-500, 500, 4).astype(np.int32) if bias else None,
    ]  # fmt: skip
    _close_to_onnxruntime("QLinearConv", inputs, attrs, 10)


def test_qlinear_conv_refuses_per_channel_y_zero_point() -> None:
    x, w = qrand((1, 2, 3, 3), "uint8"), qrand((2, 2, 1, 1), "uint8")
    f, u = np.float32, np.uint8
    inputs = [x, np.array(1, f), np.array(0, u), w, np.array(1, f), np.array(0, u),
              np.array(1, f), np.array([0, 1], u)]  # fmt: skip
    with pytest.raises(ValueError, match=r"QLinearConv: y_zero_point .* not supported"):
        ours("QLinearConv", list(inputs), opset=10)
