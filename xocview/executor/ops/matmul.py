"""Gemm, MatMul, MatMulInteger and Einsum, all handed to BLAS through np.matmul."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["einsum", "gemm", "matmul", "matmul_integer"]


def _gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None,
    alpha: float,
    beta: float,
    trans_a: int,
    trans_b: int,
) -> np.ndarray:
    """alpha * A' @ B' + beta * C in A's dtype, scaling in place.

    Transposes are views: np.matmul passes a Fortran-ordered operand to BLAS as transposed
    without copying it.
    """
    y = np.matmul(a.T if trans_a else a, b.T if trans_b else b)
    dt = y.dtype.type
    if alpha != 1:
        y *= dt(alpha)
    if c is not None and beta != 0:
        if beta == 1:
            y += c
        else:
            y += c * dt(beta)
    return y


@kernel("Gemm", since=1)
def gemm_1(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    broadcast: int = 0,
    transA: int = 0,
    transB: int = 0,
) -> np.ndarray:
    """Gemm-1 and -6: C is required; ``broadcast`` only permits what numpy broadcasts anyway."""
    return _gemm(a, b, c, alpha, beta, transA, transB)


@kernel("Gemm", since=7)
def gemm(
    a: np.ndarray,
    b: np.ndarray,
    c: np.ndarray | None = None,
    *,
    alpha: float = 1.0,
    beta: float = 1.0,
    transA: int = 0,
    transB: int = 0,
) -> np.ndarray:
    """Gemm-7 on: C broadcasts one way to (M, N), optional from Gemm-11."""
    return _gemm(a, b, c, alpha, beta, transA, transB)


@kernel("MatMul", since=1)
def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """numpy.matmul semantics, which ONNX adopted (1-D operands promoted and squeezed)."""
    return np.matmul(a, b)


def _shifted(x: np.ndarray, zero: np.ndarray | None, axis_of_vector: int) -> np.ndarray:
    """x - zero_point in float64: exact for 8-bit operands and BLAS-fast."""
    out = x.astype(np.float64)
    if zero is not None:
        z = zero.astype(np.float64)
        if z.ndim == 1 and z.size > 1:
            z = z.reshape((-1, 1)) if axis_of_vector == 0 else z
        out -= z
    return out


@kernel("MatMulInteger", since=10)
def matmul_integer(
    a: np.ndarray,
    b: np.ndarray,
    a_zero_point: np.ndarray | None = None,
    b_zero_point: np.ndarray | None = None,
) -> np.ndarray:
    """(A - a_zero_point) @ (B - b_zero_point) as int32.

    8-bit products summed in float64 stay exact for any inner size below 2**36, and float64
    matmul goes to BLAS where an integer matmul would not. A per-row a_zero_point has M entries.
    """
    y = np.matmul(_shifted(a, a_zero_point, 0), _shifted(b, b_zero_point, 1))
    return y.astype(np.int32)


@kernel("Einsum", since=12)
def einsum(*inputs: np.ndarray, equation: str | bytes) -> np.ndarray:
    """np.einsum with path optimisation (pairwise contractions become tensordot/BLAS).

    The result is copied when numpy returns a view of an input, so no output aliases an input.
    """
    eq = equation.decode() if isinstance(equation, bytes) else equation
    out = np.asarray(np.einsum(eq.replace(" ", ""), *inputs, optimize=len(inputs) > 1))
    if any(np.shares_memory(out, x) for x in inputs):
        out = out.copy()
    return out
