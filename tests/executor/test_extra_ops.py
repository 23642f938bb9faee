"""Bitwise, triangular and extra-math kernels against onnxruntime, plus their refusals."""

from __future__ import annotations

import numpy as np
import pytest

from tests.executor.ort_reference import INTS, check_op, ours


def rand(shape: tuple[int, ...], dtype: str, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.uniform(-2, 2, size=shape).astype(dtype)


@pytest.mark.parametrize("op", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_binary(op: str, dtype: str) -> None:
    check_op(op, [rand((2, 3, 4), dtype, 1), rand((3, 1), dtype, 2)], opset=18)


@pytest.mark.parametrize("dtype", INTS)
def test_bitwise_not(dtype: str) -> None:
    check_op("BitwiseNot", [rand((3, 4), dtype)], opset=18)


@pytest.mark.parametrize("op", ["Acosh", "Asinh", "Atanh"])
def test_inverse_hyperbolic(op: str) -> None:
    x = np.array([-1.5, -0.5, 0.0, 0.5, 1.0, 1.5, 3.0], dtype=np.float32)
    check_op(op, [x], opset=9)  # onnxruntime has float32 only; NaN outside the domain
    (half,) = ours(op, [x.astype(np.float16)], opset=22)
    assert half.dtype == np.float16


@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8"])
def test_shrink(dtype: str) -> None:
    check_op("Shrink", [rand((4, 5), dtype)], {"lambd": 1.5, "bias": 1.0}, opset=9)


@pytest.mark.parametrize("upper", [0, 1])
@pytest.mark.parametrize("k", [None, -2, 0, 1, 7])
@pytest.mark.parametrize("shape", [(3, 5), (2, 4, 3), (0, 3)])
def test_trilu(upper: int, k: int | None, shape: tuple[int, ...]) -> None:
    kin = None if k is None else np.array(k, dtype=np.int64)
    check_op("Trilu", [rand(shape, "float32"), kin], {"upper": upper}, opset=14)


def test_trilu_strings_and_bools() -> None:
    words = np.array([["a", "b"], ["c", "d"]], dtype=object)
    (got,) = ours("Trilu", [words, None], {"upper": 0}, opset=14)
    assert got.tolist() == [["a", ""], ["c", "d"]]
    (flags,) = ours("Trilu", [np.ones((2, 2), bool), np.array(1)], {"upper": 1}, opset=14)
    assert flags.tolist() == [[False, True], [False, False]]


@pytest.mark.parametrize(("batch_axis", "time_axis"), [(1, 0), (0, 1)])
def test_reverse_sequence(batch_axis: int, time_axis: int) -> None:
    x = rand((4, 4, 2), "float32")
    lens = np.array([4, 0, 1, 3], dtype=np.int64)
    attrs = {"batch_axis": batch_axis, "time_axis": time_axis}
    check_op("ReverseSequence", [x, lens], attrs, opset=10)


@pytest.mark.parametrize("dtype", ["float32", "float16"])  # onnxruntime has no float64 Det
def test_det(dtype: str) -> None:
    check_op("Det", [rand((2, 3, 3), dtype)], opset=11, rtol=1e-2, atol=1e-2)
    (scalar,) = ours("Det", [np.diag([2.0, 3.0]).astype(dtype)], opset=22)
    assert scalar.shape == () and scalar.dtype == np.dtype(dtype) and float(scalar) == 6.0


@pytest.mark.parametrize("p", [1, 2])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_lp_normalization(p: int, axis: int) -> None:
    x = rand((3, 4, 2), "float32")
    x[0] = 0  # a zero norm along axis 1 and 2 gives zeros
    (got,) = ours("LpNormalization", [x], {"axis": axis, "p": p}, opset=1)
    norm = np.linalg.norm(x.astype(np.float64), ord=p, axis=axis, keepdims=True)
    want = np.where(norm == 0, 0, x / np.where(norm == 0, 1, norm))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32


@pytest.mark.parametrize(
    ("exclusive", "reverse", "axis"), [(0, 0, 0), (1, 0, 1), (0, 1, -1), (1, 1, 0)]
)
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint32"])
def test_cum_prod(exclusive: int, reverse: int, axis: int, dtype: str) -> None:
    x = np.arange(1, 7, dtype=dtype).reshape(2, 3)
    attrs = {"exclusive": exclusive, "reverse": reverse}
    (got,) = ours("CumProd", [x, np.array(axis)], attrs, opset=26)
    ax = axis % 2
    data = np.flip(x, ax) if reverse else x
    want = np.cumprod(data, axis=ax, dtype=x.dtype)
    if exclusive:
        ones = np.ones_like(np.take(want, [0], axis=ax))
        want = np.concatenate([ones, np.delete(want, -1, axis=ax)], axis=ax)
    want = np.flip(want, ax) if reverse else want
    np.testing.assert_array_equal(got, want)
    assert got.dtype == x.dtype


def test_swish_and_rms_normalization_dtypes() -> None:
    x = np.array([-60.0, -1.0, 0.0, 1.0, 60.0], dtype=np.float16)
    (got,) = ours("Swish", [x], {"alpha": 2.0}, opset=24)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(got, wide / (1 + np.exp(-2 * wide)), rtol=1e-3, atol=1e-3)
    assert got.dtype == np.float16
    (y,) = ours("RMSNormalization", [x.reshape(1, 5), np.ones(5, np.float32)], {}, opset=23)
    assert y.dtype == np.float32  # the scale's type


def test_bit_cast() -> None:
    x = np.array([1.0, -2.5], dtype=np.float32)
    (got,) = ours("BitCast", [x], {"to": 6}, opset=26)  # INT32
    np.testing.assert_array_equal(got, x.view(np.int32))
    (flags,) = ours("BitCast", [np.array([True, False])], {"to": 2}, opset=26)  # UINT8
    assert flags.dtype == np.uint8 and flags.tolist() == [1, 0]


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("BitwiseAnd", [np.ones(2), np.ones(2)], {}),
        ("BitwiseNot", [np.ones(2, np.float32)], {}),
        ("Acosh", [np.ones(2, np.int32)], {}),
        ("LpNormalization", [np.ones(2, np.float32)], {"p": 3}),
        ("RMSNormalization", [np.ones(2, np.float32), np.ones(2, np.float32)], {"stash_type": 16}),
        ("BitCast", [np.ones(2, np.float32)], {"to": 8}),  # STRING
        ("BitCast", [np.ones(2, np.float32)], {"to": 22}),  # INT4
    ],
)
def test_refusals_say_not_supported(
    op: str, inputs: list[np.ndarray], attrs: dict[str, object]
) -> None:
    with pytest.raises(ValueError, match="not supported"):
        ours(op, list(inputs), attrs, opset=26)
