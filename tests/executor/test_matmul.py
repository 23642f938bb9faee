"""Gemm, MatMul and Einsum against onnxruntime; MatMulInteger against the spec's exact integers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(3)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("trans_a", [0, 1])
@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("c_shape", [None, (), (1,), (5,), (3, 1), (1, 5), (3, 5)])
@pytest.mark.parametrize(("alpha", "beta"), [(1.0, 1.0), (0.5, 2.0), (2.0, 0.0)])
def test_gemm(
    trans_a: int, trans_b: int, c_shape: tuple[int, ...] | None, alpha: float, beta: float
) -> None:
    a = rand(4, 3) if trans_a else rand(3, 4)
    b = rand(5, 4) if trans_b else rand(4, 5)
    c = None if c_shape is None else rand(*c_shape)
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}
    check_op("Gemm", [a, b, c], attrs, opset=13)


@pytest.mark.parametrize("opset", [7, 9, 11])
def test_gemm_opsets(opset: int) -> None:
    check_op("Gemm", [rand(3, 4), rand(5, 4), rand(5)], {"transB": 1, "beta": 0.5}, opset=opset)


@pytest.mark.parametrize("opset", [1, 6])
def test_gemm_legacy_broadcast(opset: int) -> None:
    """onnxruntime has no Gemm before 7; broadcast=1 lets C broadcast as numpy does."""
    a, b, c = rand(3, 4), rand(4, 5), rand(5)
    (got,) = ours("Gemm", [a, b, c], {"broadcast": 1, "alpha": 2.0, "beta": 0.5}, opset=opset)
    np.testing.assert_allclose(got, 2 * a @ b + 0.5 * c, rtol=1e-5, atol=1e-6)
    assert got.dtype == np.float32


def test_gemm_float64_and_empty() -> None:
    wide = [rand(3, 4, dtype=np.float64), rand(4, 5, dtype=np.float64), rand(5, dtype=np.float64)]
    check_op("Gemm", wide, {"alpha": 0.3}, rtol=1e-12)
    check_op("Gemm", [rand(0, 4), rand(4, 5), rand(5)], {})


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [
        ((3, 4), (4, 5)),
        ((4,), (4, 5)),
        ((3, 4), (4,)),
        ((4,), (4,)),
        ((2, 3, 4), (4, 5)),
        ((2, 3, 4), (2, 4, 5)),
        ((3, 1, 2, 4), (2, 4, 5)),
        ((4,), (2, 4, 5)),
        ((2, 3, 4), (4,)),
        ((0, 3, 4), (4, 5)),
        ((3, 0), (0, 5)),
    ],
)
def test_matmul(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    check_op("MatMul", [rand(*a_shape), rand(*b_shape)], {})


@pytest.mark.parametrize(
    ("opset", "dtype"), [(1, np.float64), (9, np.int32), (13, np.int64), (13, np.float64)]
)
def test_matmul_dtypes(opset: int, dtype: Any) -> None:
    """MatMul-1 is float only; 9 adds the integer types."""
    a, b = (rand(2, 3, 4) * 10).astype(dtype), (rand(4, 5) * 10).astype(dtype)
    check_op("MatMul", [a, b], {}, opset=opset, rtol=1e-12)


def test_matmul_float16() -> None:
    a, b = rand(3, 8, dtype=np.float16), rand(8, 2, dtype=np.float16)
    check_op("MatMul", [a, b], {}, rtol=1e-2, atol=1e-2)


def q8(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)


def matmul_integer_spec(
    a: np.ndarray, b: np.ndarray, za: np.ndarray | None, zb: np.ndarray | None
) -> np.ndarray:
    """MatMulInteger as ONNX defines it: (A - a_zero_point) @ (B - b_zero_point) in exact
    integer arithmetic, int32 out. A zero point of A is a scalar or one per row (1-D of M);
    one of B is a scalar or one per column (1-D of N).

    onnxruntime is no yardstick here: its x86 uint8 x int8 kernel adds pairs of products in
    int16 with saturation (the AVX2 u8s8 path), so its result depends on the CPU.
    """
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    if za is not None:
        a64 = a64 - (za.astype(np.int64)[:, None] if za.ndim == 1 else za.astype(np.int64))
    if zb is not None:
        b64 = b64 - zb.astype(np.int64)
    return np.matmul(a64, b64).astype(np.int32)


@pytest.mark.parametrize("a_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("b_dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("zero_points", [False, True])
def test_matmul_integer(a_dtype: Any, b_dtype: Any, zero_points: bool) -> None:
    # Extreme values on purpose: 255 * 127 pairs are what a saturating int16 sum gets wrong.
    a, b = q8((2, 3, 16), a_dtype), q8((16, 5), b_dtype)
    a[0, 0, :] = np.iinfo(a_dtype).max
    b[:, 0] = np.iinfo(b_dtype).max
    za = q8((), a_dtype) if zero_points else None
    zb = q8((5,), b_dtype) if zero_points else None
    (got,) = ours("MatMulInteger", [a, b, za, zb], {})
    expected = matmul_integer_spec(a, b, za, zb)
    assert got.dtype == np.int32
    assert got.shape == (2, 3, 5)
    np.testing.assert_array_equal(got, expected)


def test_matmul_integer_spec_is_exact_where_int16_pairs_saturate() -> None:
    """The reference itself: 255 * 127 + 255 * 127 = 64,770 does not fit int16 (32,767)."""
    a = np.full((1, 2), 255, np.uint8)
    b = np.full((2, 1), 127, np.int8)
    assert matmul_integer_spec(a, b, None, None)[0, 0] == 64_770
    (got,) = ours("MatMulInteger", [a, b, None, None], {})
    assert got[0, 0] == 64_770


def test_matmul_integer_per_row_zero_point() -> None:
    """onnxruntime only takes a scalar a_zero_point; the spec also allows one per row of A."""
    a, b = q8((3, 6), np.uint8), q8((6, 4), np.uint8)
    za, zb = q8((3,), np.uint8), q8((4,), np.uint8)
    (got,) = ours("MatMulInteger", [a, b, za, zb], {})
    expected = (a.astype(np.int64) - za[:, None]) @ (b.astype(np.int64) - zb)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, matmul_integer_spec(a, b, za, zb))


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)]),
        ("bij, bjk -> bik", [(2, 3, 4), (2, 4, 5)]),
        ("ij->ji", [(3, 4)]),
        ("ii->i", [(4, 4)]),
        ("ii", [(4, 4)]),
        ("ij->", [(3, 4)]),
        ("i,i", [(5,), (5,)]),
        ("i,j->ij", [(3,), (4,)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]),
        ("bhqd,bhkd->bhqk", [(2, 3, 4, 8), (2, 3, 5, 8)]),
        ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
        ("abc,cd", [(2, 3, 4), (4, 5)]),
    ],
)
def test_einsum(equation: str, shapes: list[tuple[int, ...]]) -> None:
    check_op("Einsum", [rand(*s) for s in shapes], {"equation": equation})


def test_einsum_float64_int_and_no_alias() -> None:
    check_op("Einsum", [rand(3, 4, dtype=np.float64)], {"equation": "ij->ji"}, rtol=1e-12)
    ints = (rand(3, 4) * 10).astype(np.int32)
    check_op("Einsum", [ints, ints.T.copy()], {"equation": "ij,jk->ik"})
    x = rand(3, 4)
    (y,) = ours("Einsum", [x], {"equation": "ij->ij"})
    assert not np.shares_memory(x, y)


def test_float32_in_float32_out() -> None:
    """Python-float alpha and beta must not promote a float32 Gemm to float64."""
    (y,) = ours("Gemm", [rand(2, 3), rand(3, 4), rand(4)], {"alpha": 0.1, "beta": 0.3})
    assert y.dtype == np.float32
