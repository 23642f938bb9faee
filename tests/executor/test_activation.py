"""Activation kernels against onnxruntime (numpy formulas for dtypes onnxruntime lacks)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import FLOATS, INTS, check_op, ours


def rand(shape: tuple[int, ...], dtype: str, low: float = -5, high: float = 5, seed: int = 0):
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        lo, hi = max(int(low), np.iinfo(dt).min), min(int(high), np.iinfo(dt).max)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    return rng.uniform(low, high, size=shape).astype(dt)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf)(x)


def _softplus(x: np.ndarray) -> np.ndarray:
    return np.log1p(np.exp(x))


# op -> (opset, attribute sets to try, dtypes onnxruntime implements, float64 reference)
Reference = Callable[..., np.ndarray]
ACTIVATIONS: dict[str, tuple[int, list[dict[str, Any]], list[str], Reference]] = {
    "Relu": (14, [{}], [*FLOATS, "int8", "int32"], lambda x: np.maximum(x, 0)),
    "LeakyRelu": (
        16,
        [{}, {"alpha": 0.2}],
        FLOATS,
        lambda x, alpha=0.01: np.where(x < 0, alpha * x, x),
    ),
    "Sigmoid": (13, [{}], FLOATS, lambda x: 1 / (1 + np.exp(-x))),
    "Tanh": (13, [{}], FLOATS, np.tanh),
    "HardSwish": (14, [{}], ["float32", "float16"], lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "HardSigmoid": (
        17,
        [{}, {"alpha": 0.5, "beta": 0.25}],
        ["float32", "float16"],
        lambda x, alpha=0.2, beta=0.5: np.clip(alpha * x + beta, 0, 1),
    ),
    "Elu": (
        17,
        [{}, {"alpha": 0.5}],
        ["float32", "float16"],
        lambda x, alpha=1.0: np.where(x < 0, alpha * (np.exp(x) - 1), x),
    ),
    "Selu": (
        17,
        [{}, {"alpha": 2.0, "gamma": 3.0}],
        ["float32", "float16"],
        lambda x, alpha=1.6732632423543772, gamma=1.0507009873554805: (
            gamma * np.where(x > 0, x, alpha * (np.exp(x) - 1))
        ),
    ),
    "Celu": (
        12,
        [{}, {"alpha": 2.0}],
        ["float32"],
        lambda x, alpha=1.0: np.maximum(x, 0) + np.minimum(0, alpha * (np.exp(x / alpha) - 1)),
    ),
    "Softplus": (17, [{}], ["float32", "float16"], _softplus),
    "Softsign": (17, [{}], ["float32", "float16"], lambda x: x / (1 + np.abs(x))),
    "Mish": (18, [{}], FLOATS, lambda x: x * np.tanh(_softplus(x))),
    "ThresholdedRelu": (
        10,
        [{}, {"alpha": 0.5}],
        ["float32", "float16"],
        lambda x, alpha=1.0: np.where(x > alpha, x, 0),
    ),
    "Gelu": (
        20,
        [{}, {"approximate": "tanh"}],
        ["float32", "float16"],
        lambda x, approximate="none": (
            0.5 * x * (1 + _erf(x / math.sqrt(2)))
            if approximate == "none"
            else 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
        ),
    ),
}
CASES = [
    (op, dtype, attrs)
    for op, (_, attr_sets, dtypes, _) in ACTIVATIONS.items()
    for dtype in dtypes
    for attrs in attr_sets
]


@pytest.mark.parametrize(("op", "dtype", "attrs"), CASES)
def test_activation(op: str, dtype: str, attrs: dict[str, Any]) -> None:
    opset = ACTIVATIONS[op][0]
    tol = 3e-3 if dtype == "float16" else 1e-5
    check_op(op, [rand((3, 4, 5), dtype, -6, 6)], attrs, opset=opset, rtol=tol, atol=tol)
    check_op(op, [rand((), dtype)], attrs, opset=opset, rtol=tol, atol=tol)
    check_op(op, [rand((0, 4), dtype)], attrs, opset=opset)


@pytest.mark.parametrize("op", [op for op, spec in ACTIVATIONS.items() if "float64" not in spec[2]])
def test_float64_against_the_formula(op: str) -> None:
    # onnxruntime has no float64 kernel for these; the ONNX definition in numpy stands in
    opset, attr_sets, _, reference = ACTIVATIONS[op]
    x = rand((4, 5), "float64", -6, 6)
    for attrs in attr_sets:
        (got,) = ours(op, [x], attrs, opset=opset)
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, reference(x, **attrs), rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("op", ["Sigmoid", "Softplus", "Elu", "Selu", "Mish", "Gelu", "Tanh"])
def test_extreme_values_do_not_overflow(op: str) -> None:
    x = np.array([-1e4, -100, -30, 0, 30, 100, 1e4], np.float32)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        ours(op, [x], opset=ACTIVATIONS[op][0])
    check_op(op, [x], opset=ACTIVATIONS[op][0])


@pytest.mark.parametrize(
    ("op", "attrs"),
    [
        ("Relu", {}),
        ("Sigmoid", {}),
        ("Tanh", {}),
        ("LeakyRelu", {"alpha": 0.3}),
        ("Elu", {"alpha": 0.7}),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}),
        ("Selu", {"alpha": 1.5, "gamma": 1.2}),
    ],
)
def test_opset_6_and_1(op: str, attrs: dict[str, Any]) -> None:
    x = rand((2, 3, 4), "float32")
    (at_6,) = check_op(op, [x], attrs, opset=6)
    # onnxruntime has no opset-1 kernels; opset 1 only added consumed_inputs
    (at_1,) = ours(op, [x], {**attrs, "consumed_inputs": [0]}, opset=1)
    np.testing.assert_array_equal(at_1, at_6)


def test_selu_opset_1_defaults() -> None:
    x = rand((10,), "float32")
    (got,) = ours("Selu", [x], opset=1)
    alpha, gamma = 1.673200011253357, 1.0506999492645264
    expected = gamma * np.where(x > 0, x, alpha * np.expm1(x.astype(np.float64)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)


PRELU_SLOPES = [(3, 1, 1), (1,), (5,), (2, 3, 4, 5), (4, 1)]


@pytest.mark.parametrize("slope_shape", PRELU_SLOPES)
@pytest.mark.parametrize("opset", [7, 9, 16])
def test_prelu_broadcast(slope_shape: tuple[int, ...], opset: int) -> None:
    check_op(
        "PRelu", [rand((2, 3, 4, 5), "float32"), rand(slope_shape, "float32", 0, 1)], opset=opset
    )


@pytest.mark.parametrize("dtype", [*FLOATS, "int32", "int64", "uint32"])
def test_prelu_dtypes(dtype: str) -> None:
    check_op("PRelu", [rand((3, 4), dtype, -9, 9), rand((4,), dtype, 0, 3)], opset=16)
    check_op("PRelu", [rand((0, 4), dtype), rand((1,), dtype, 0, 3)], opset=16)


@pytest.mark.parametrize("opset", [1, 6])
def test_prelu_per_channel_before_opset_7(opset: int) -> None:
    # onnxruntime has no kernel before opset 7; a 1-D slope then applied per channel (axis 1)
    x, slope = rand((2, 3, 4, 5), "float32"), rand((3,), "float32", 0, 1)
    (got,) = ours("PRelu", [x, slope], opset=opset)
    np.testing.assert_array_equal(got, np.where(x < 0, x * slope[:, None, None], x))
    (shared,) = ours("PRelu", [x, np.array([0.25], np.float32)], opset=opset)
    np.testing.assert_array_equal(shared, np.where(x < 0, x * np.float32(0.25), x))


CLIP_BOUNDS = [(-2, 3), (-2, None), (None, 3), (None, None), (3, -2)]


def _clip_case(dtype: str, bounds: tuple[int | None, int | None]) -> list[np.ndarray | None]:
    if np.dtype(dtype).kind == "u":
        bounds = (None if b is None else abs(b) for b in bounds)  # type: ignore[assignment]
    low, high = (None if b is None else np.array(b, dtype) for b in bounds)
    return [rand((3, 4), dtype, -9, 9), low, high]


@pytest.mark.parametrize("dtype", [d for d in FLOATS + INTS if d not in ("int16", "uint16")])
@pytest.mark.parametrize("bounds", CLIP_BOUNDS)
def test_clip_inputs(dtype: str, bounds: tuple[int | None, int | None]) -> None:
    check_op("Clip", _clip_case(dtype, bounds), opset=13)


@pytest.mark.parametrize("dtype", ["int16", "uint16"])
@pytest.mark.parametrize("bounds", CLIP_BOUNDS)
def test_clip_16_bit_integers(dtype: str, bounds: tuple[int | None, int | None]) -> None:
    # onnxruntime's CPU Clip lacks 16-bit integers: numpy's max-then-min stands in
    x, low, high = _clip_case(dtype, bounds)
    (got,) = ours("Clip", [x, low, high], opset=13)
    expected = x if low is None else np.maximum(x, low)
    expected = expected if high is None else np.minimum(expected, high)
    np.testing.assert_array_equal(got, expected)
    assert got.dtype == np.dtype(dtype)


def test_clip_versions() -> None:
    x = rand((3, 4), "float32", -9, 9)
    x[0, 0], x[0, 1] = np.nan, np.inf
    check_op("Clip", [x, np.array(-1, np.float32), np.array(2, np.float32)], opset=11)
    check_op("Clip", [x, np.array(-1, np.float32)], opset=12)
    check_op("Clip", [x], {"min": -1.0, "max": 2.0}, opset=6)
    check_op("Clip", [x], {"max": 2.0}, opset=6)
    check_op("Clip", [x.astype(np.float16)], {"min": -1.0}, opset=6)  # float32 limits overflow
    check_op("Clip", [rand((0, 2), "float32")], {"min": -1.0}, opset=6)
    (got,) = ours("Clip", [x], {"min": -1.0, "consumed_inputs": [0]}, opset=1)
    np.testing.assert_array_equal(got, np.maximum(x, np.float32(-1)))  # no max: no upper bound


SOFTMAXES = ["Softmax", "LogSoftmax", "Hardmax"]


@pytest.mark.parametrize("op", SOFTMAXES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, None])
@pytest.mark.parametrize("opset", [1, 11, 13])
def test_softmax_axes(op: str, axis: int | None, opset: int) -> None:
    attrs = {} if axis is None else {"axis": axis}
    check_op(op, [rand((2, 3, 4), "float32")], attrs, opset=opset)


@pytest.mark.parametrize("op", SOFTMAXES)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (2, 0, 4)])
@pytest.mark.parametrize("opset", [11, 13])
def test_softmax_empty(op: str, shape: tuple[int, ...], opset: int) -> None:
    check_op(op, [rand(shape, "float32")], {"axis": 1}, opset=opset)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [(op, dt) for op in SOFTMAXES for dt in FLOATS if not (op == "Hardmax" and dt == "float64")],
)
def test_softmax_dtypes(op: str, dtype: str) -> None:
    x = rand((3, 7), dtype, -50, 50)  # large spreads: the max shift must keep exp finite
    tol = 3e-3 if dtype == "float16" else 1e-5
    check_op(op, [x], rtol=tol, atol=tol)


def test_hardmax_float64_and_ties() -> None:
    check_op("Hardmax", [np.array([[2, 1, 2], [0, 5, 5]], np.float32)])
    x = rand((3, 4), "float64")
    (got,) = ours("Hardmax", [x])
    np.testing.assert_array_equal(got, (x == x.max(axis=-1, keepdims=True)).astype(np.float64))


@pytest.mark.parametrize(
    "case", ["plain", "wide spread", "masked -1e4", "masked -inf", "near overflow", "far below"]
)
@pytest.mark.parametrize("row", [16, 300])
@pytest.mark.parametrize("rows", [8, 600])
def test_softmax_of_short_and_long_rows_matches_float64(case: str, row: int, rows: int) -> None:
    """Short rows may share one shift for the whole tensor (or, past a block of elements,
    for a block of rows); the result must not tell."""
    from xocview.executor.ops.activation import log_softmax, softmax

    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, rows, row)).astype(np.float32)
    if case == "wide spread":
        x *= 30
    elif case.startswith("masked"):
        x[rng.random(x.shape) < 0.3] = -1e4 if case.endswith("1e4") else -np.inf
    elif case == "near overflow":
        x = x * 5 + 85
    elif case == "far below":
        x = x * 5 - 300
    wide = x.astype(np.float64)
    shifted = wide - wide.max(-1, keepdims=True)
    e = np.exp(shifted)
    expected = e / e.sum(-1, keepdims=True)
    np.testing.assert_allclose(softmax(x), expected, rtol=2e-6, atol=1e-7)
    if np.isfinite(x).all():
        logs = shifted - np.log(e.sum(-1, keepdims=True))
        np.testing.assert_allclose(log_softmax(x), logs, rtol=1e-5, atol=1e-4)
