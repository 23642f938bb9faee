"""Element-wise arithmetic and unary math kernels against onnxruntime (numpy where ORT lacks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.executor.ort_reference import BROADCAST_SHAPES, FLOATS, INTS, check_op, ours
from xocview.executor.ops.unary import erf_float32, erf_float64

SHAPES = BROADCAST_SHAPES


def rand(shape: tuple[int, ...], dtype: str, low: float = -5, high: float = 5, seed: int = 0):
    """Random values of ``dtype`` in [low, high) (clipped to the dtype's range)."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        lo, hi = max(int(low), np.iinfo(dt).min), min(int(high), np.iinfo(dt).max)
        return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
    return rng.uniform(low, high, size=shape).astype(dt)


def nonzero(shape: tuple[int, ...], dtype: str, seed: int = 1):
    """Random divisors: never 0, both signs for signed types."""
    x = rand(shape, dtype, 1, 6, seed)
    if np.dtype(dtype).kind in "if":
        x = np.where(rand(shape, "bool", seed=seed + 1), x, -x).astype(dtype)
    return x


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize(("sa", "sb"), SHAPES)
def test_binary_broadcasting(op: str, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    check_op(op, [rand(sa, "float32"), nonzero(sb, "float32")])


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div"])
@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_binary_dtypes(op: str, dtype: str) -> None:
    check_op(op, [rand((3, 5), dtype, 0, 100), nonzero((5,), dtype)], opset=14, rtol=1e-3)


def test_int_division_truncates_toward_zero() -> None:
    a = np.array([-7, 7, -7, 7, -6, 0, -1], np.int32)
    b = np.array([2, -2, -2, 2, 3, -5, 4], np.int32)
    (got,) = check_op("Div", [a, b])
    np.testing.assert_array_equal(got, [-3, -3, 3, 3, -2, 0, 0])
    big = np.array([-(2**62) - 1, 2**62 + 1], np.int64)  # beyond float64's exact integers
    check_op("Div", [big, np.array([3, -3], np.int64)])


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Pow"])
@pytest.mark.parametrize("opset", [1, 6])
def test_legacy_axis_broadcast(op: str, opset: int) -> None:
    # onnxruntime has no kernels before opset 7: compare with B reshaped by hand
    a, b = rand((2, 3, 4, 5), "float32", 1, 3), rand((3, 4), "float32", 1, 3)
    (got,) = ours(op, [a, b], {"broadcast": 1, "axis": 1}, opset=opset)
    expected = ours(op, [a, b.reshape(3, 4, 1)], opset=7)[0]
    np.testing.assert_array_equal(got, expected)
    (suffix,) = ours(op, [a, rand((4, 5), "float32", 1, 3)], {"broadcast": 1}, opset=opset)
    assert suffix.shape == a.shape
    (same,) = ours(op, [a, a], {"broadcast": 0}, opset=opset)
    assert same.dtype == np.float32 and same.shape == a.shape


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int32", "int64"])
def test_pow_same_dtype(dtype: str) -> None:
    base = rand((2, 3, 4), dtype, 0, 4)
    check_op("Pow", [base, rand((4,), dtype, 0, 3, seed=2)], rtol=1e-3)


@pytest.mark.parametrize(
    ("base", "exponent"),
    [("int32", "float32"), ("float32", "int64"), ("float16", "float32"), ("int64", "float64")],
)
def test_pow_mixed_dtypes_keep_the_base_dtype(base: str, exponent: str) -> None:
    check_op("Pow", [rand((3, 4), base, 0, 5), rand((4,), exponent, 0, 3, seed=3)], rtol=1e-3)


def test_pow_integer_edges() -> None:
    # negative exponents truncate; 3**39 goes through double as onnxruntime's does
    check_op("Pow", [np.array([2, -3, 5, 1], np.int32), np.array([-1, 3, 2, -2], np.int32)])
    check_op("Pow", [np.array([3, -2], np.int64), np.array([39, 61], np.int64)])
    check_op("Pow", [rand((0, 2), "float32"), np.array(2.0, np.float32)])


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize("fmod", [0, 1])
def test_mod_integers(dtype: str, fmod: int) -> None:
    a = rand((4, 6), dtype, -50, 50)
    check_op("Mod", [a, nonzero((6,), dtype)], {"fmod": fmod})


@pytest.mark.parametrize("dtype", FLOATS)
def test_mod_floats(dtype: str) -> None:
    a, b = rand((4, 6), dtype, -9, 9), nonzero((4, 1), dtype)
    check_op("Mod", [a, b], {"fmod": 1}, rtol=1e-3, atol=1e-3)
    # floor modulo of floats is allowed from opset 28
    check_op("Mod", [a, b], {"fmod": 0}, opset=28, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "uint32", "uint64"])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift(dtype: str, direction: str) -> None:
    bits = np.dtype(dtype).itemsize * 8
    x = rand((3, 5), dtype, 0, 200)
    check_op("BitShift", [x, rand((5,), dtype, 0, bits - 1, seed=4)], {"direction": direction})
    check_op("BitShift", [x, np.array(3, dtype)], {"direction": direction}, opset=11)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "uint8"])
@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_bit_shift_28_signed_and_out_of_range(dtype: str, direction: str) -> None:
    bits = np.dtype(dtype).itemsize * 8
    x = rand((4, 3), dtype, -100, 100)
    check_op("BitShift", [x, np.array([0, 1, bits - 1], dtype)], {"direction": direction}, opset=28)
    beyond = np.array([bits, bits + 1, -1 if dtype.startswith("int") else 0], dtype)
    check_op("BitShift", [x, beyond], {"direction": direction}, opset=28)


# op -> (low, high) of a valid input range, dtypes onnxruntime's CPU provider implements
UNARY = {
    "Sqrt": ((0, 9), FLOATS),
    "Exp": ((-5, 5), FLOATS),
    "Log": ((0.01, 9), FLOATS),
    "Neg": ((-9, 9), [*FLOATS, "int8", "int16", "int32", "int64"]),
    "Abs": ((-9, 9), FLOATS + INTS),
    "Reciprocal": ((0.5, 9), FLOATS),
    "Floor": ((-9, 9), FLOATS),
    "Ceil": ((-9, 9), FLOATS),
    "Round": ((-9, 9), FLOATS),
    "Sign": ((-9, 9), FLOATS + INTS),
    "Erf": ((-4, 4), ["float32", "float16"]),
    "Sin": ((-9, 9), FLOATS),
    "Cos": ((-9, 9), FLOATS),
    "Tan": ((-1.5, 1.5), ["float32", "float16"]),
    "Asin": ((-1, 1), ["float32", "float16"]),
    "Acos": ((-1, 1), ["float32", "float16"]),
    "Atan": ((-9, 9), ["float32", "float16"]),
    "Sinh": ((-5, 5), ["float32", "float16"]),
    "Cosh": ((-5, 5), ["float32", "float16"]),
}
NUMPY_ONLY = {  # float64 versions onnxruntime lacks, against numpy / math
    "Erf": np.vectorize(math.erf),
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
}


@pytest.mark.parametrize(
    ("op", "dtype"), [(op, dt) for op, (_, dts) in UNARY.items() for dt in dts]
)
def test_unary(op: str, dtype: str) -> None:
    (low, high), _ = UNARY[op]
    tol = 2e-3 if dtype == "float16" else 1e-5
    check_op(op, [rand((3, 4, 5), dtype, low, high)], rtol=tol, atol=tol)
    check_op(op, [rand((), dtype, low, high)], rtol=tol, atol=tol)
    check_op(op, [rand((2, 0), dtype, low, high)])


@pytest.mark.parametrize("op", NUMPY_ONLY)
def test_unary_float64_against_numpy(op: str) -> None:
    (low, high), _ = UNARY[op]
    x = rand((4, 5), "float64", low, high)
    (got,) = ours(op, [x])
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, NUMPY_ONLY[op](x), rtol=1e-7, atol=2e-8)


@pytest.mark.parametrize("op", ["Sqrt", "Exp", "Log", "Neg", "Abs", "Reciprocal", "Floor", "Ceil"])
def test_unary_opset_1_and_6(op: str) -> None:
    x = rand((2, 3), "float32", 0.5, 5)
    check_op(op, [x], opset=6)
    (got,) = ours(op, [x], {"consumed_inputs": [0]}, opset=1)
    np.testing.assert_array_equal(got, ours(op, [x], opset=13)[0])


def test_special_values() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, -1.0, 0.5, 2.5, -2.5], np.float32)
    for op in ["Sqrt", "Exp", "Log", "Reciprocal", "Round", "Sign", "Erf", "Floor", "Abs"]:
        check_op(op, [x])


def test_erf_is_accurate_to_a_few_1e_9() -> None:
    x = np.concatenate([np.linspace(-7, 7, 20001), [1e-300, -1e-9, 0.9999999, 1.0]])
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf_float64(x), expected, rtol=1e-12, atol=1e-8)
    small = x[np.abs(x) < 1]
    np.testing.assert_allclose(erf_float64(small), expected[np.abs(x) < 1], rtol=1e-14)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
@pytest.mark.parametrize(
    "shapes",
    [
        [(2, 3)],
        [(2, 3), (2, 3)],
        [(2, 1, 3), (4, 1), ()],
        [(3,), (2, 3), (4, 1, 1)],
        [(0, 3), (3,)],
    ],
)
def test_variadic_broadcasting(op: str, shapes: list[tuple[int, ...]]) -> None:
    check_op(op, [rand(s, "float32", seed=i) for i, s in enumerate(shapes)])


@pytest.mark.parametrize(
    ("op", "dtypes"),
    [
        ("Sum", FLOATS),
        ("Mean", ["float32", "float16"]),
        ("Max", [*FLOATS, "int8", "int32", "int64", "uint8", "uint32", "uint64"]),
        ("Min", [*FLOATS, "int8", "int32", "int64", "uint8", "uint32", "uint64"]),
    ],
)
def test_variadic_dtypes(op: str, dtypes: list[str]) -> None:
    for dtype in dtypes:
        xs = [rand((3, 4), dtype, 0, 50, seed=i) for i in range(3)]
        check_op(op, xs, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [("Max", "int16"), ("Max", "uint16"), ("Min", "int16"), ("Min", "uint16"), ("Mean", "float64")],
)
def test_variadic_dtypes_onnxruntime_lacks(op: str, dtype: str) -> None:
    xs = [rand((3, 4), dtype, 0, 50, seed=1), rand((4,), dtype, 0, 50, seed=2)]
    (got,) = ours(op, xs)
    reference = {"Max": np.maximum, "Min": np.minimum, "Mean": lambda a, b: (a + b) / 2}[op]
    np.testing.assert_array_equal(got, reference(*xs))
    assert got.dtype == np.dtype(dtype)


@pytest.mark.parametrize("op", ["Sum", "Mean", "Max", "Min"])
def test_variadic_old_opsets(op: str) -> None:
    a, b = rand((2, 3), "float32", seed=3), rand((2, 3), "float32", seed=4)
    check_op(op, [a, b], opset=6)
    (got,) = ours(op, [a, b], {"consumed_inputs": [0, 0]}, opset=1)
    np.testing.assert_array_equal(got, ours(op, [a, b])[0])


def test_max_min_propagate_nan() -> None:
    a = np.array([np.nan, 1, 2], np.float32)
    b = np.array([0, np.nan, 3], np.float32)
    check_op("Max", [a, b])
    check_op("Min", [a, b])


def test_results_are_arrays_even_for_scalars() -> None:
    x = np.array(2.0, np.float32)
    for op in ["Add", "Div", "Pow", "Max"]:
        (got,) = ours(op, [x, x])
        assert isinstance(got, np.ndarray)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("exponent", [2.0, 3.0])
@pytest.mark.parametrize("y_shape", [(), (1,), (1, 1, 1)])
def test_pow_by_two_or_three_is_products_as_in_onnxruntime(
    dtype: str, exponent: float, y_shape: tuple[int, ...]
) -> None:
    """GELU's x**3 as products (libm's pow is ~100x slower); the values are onnxruntime's."""
    x = np.random.default_rng(3).standard_normal((2, 5)).astype(dtype) * 4
    check_op("Pow", [x, np.full(y_shape, exponent, dtype)], opset=15)


def test_the_float32_erf_stays_within_half_a_micro_of_the_float64_one() -> None:
    x = np.concatenate(
        [np.linspace(-6, 6, 200_001), [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30]]
    ).astype(np.float32)
    got = erf_float32(x)
    assert got.dtype == np.float32
    want = erf_float64(x)
    finite = np.isfinite(x)
    assert np.abs(got[finite] - want[finite]).max() < 5e-7
    assert got[-5:-3].tolist() == [1.0, -1.0] and np.isnan(got[-3])
    assert np.signbit(got[-6]) and got[-6] == 0  # erf(-0) is -0
