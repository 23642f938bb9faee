"""Element-wise math of one tensor: Sqrt, Exp, Log, rounding, sign, Erf and trigonometry."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["erf_float64"]

# erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1)); 19 terms reach 1e-17 for |x| <= 1.
# Highest degree first, for Horner's rule in x*x.
_ERF_SERIES = [
    2.0 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
    for n in reversed(range(19))
]
# erfc(z) = t * exp(-z*z + P(t)), t = 1 / (1 + z/2), for z >= 0 with a relative error below
# 1.2e-7 (Numerical Recipes' Chebyshev fit, "erfcc"); used for |x| >= 1, where erfc <= 0.16 so
# erf's absolute error stays under 2e-8, about half a float32 ulp. Highest degree first.
_ERFC_FIT = [
    0.17087277,
    -0.82215223,
    1.48851587,
    -1.13520398,
    0.27886807,
    -0.18628806,
    0.09678418,
    0.37409196,
    1.00002368,
    -1.26551223,
]


def _horner(t: np.ndarray, coeffs: Sequence[float]) -> np.ndarray:
    acc = np.full_like(t, coeffs[0])
    for c in coeffs[1:]:
        acc *= t
        acc += c
    return acc


def erf_float64(x: np.ndarray) -> np.ndarray:
    """The error function in float64, vectorised (numpy has none and scipy is not a dependency).

    A Taylor series for |x| < 1 (exact to float64 rounding) and a Chebyshev fit of erfc beyond:
    absolute error below 2e-8 everywhere, NaN and +-inf handled.
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    tail = 1.0 - t * np.exp(_horner(t, _ERFC_FIT) - z * z)
    small = np.clip(x, -1.0, 1.0)
    series = small * _horner(small * small, _ERF_SERIES)
    return np.where(z < 1.0, series, np.copysign(tail, x))


def _quiet(ufunc: Callable[..., np.ndarray], x: np.ndarray) -> np.ndarray:
    """``ufunc(x)`` as an array (never a numpy scalar), without warnings for inf and NaN results
    (log of a negative, overflowing exp), which ONNX defines as IEEE arithmetic gives them."""
    with np.errstate(all="ignore"):
        return np.asarray(ufunc(x))


@kernel("Sqrt", since=1)
def sqrt(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    """``consumed_inputs`` (opset 1 only) was an in-place hint; every version ignores it."""
    return _quiet(np.sqrt, x)


@kernel("Exp", since=1)
def exp(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.exp, x)


@kernel("Log", since=1)
def log(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.log, x)


@kernel("Neg", since=1)
def neg(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.negative, x)


@kernel("Abs", since=1)
def abs_(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.abs, x)


@kernel("Reciprocal", since=1)
def reciprocal(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.reciprocal, x)


@kernel("Floor", since=1)
def floor(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.floor, x)


@kernel("Ceil", since=1)
def ceil(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
    return _quiet(np.ceil, x)


@kernel("Round", since=11)
def round_(x: np.ndarray) -> np.ndarray:
    """Halves go to the even neighbour, in ONNX as in numpy."""
    return _quiet(np.round, x)


@kernel("Sign", since=9)
def sign(x: np.ndarray) -> np.ndarray:
    return _quiet(np.sign, x)


@kernel("Erf", since=9)
def erf(x: np.ndarray) -> np.ndarray:
    return erf_float64(x).astype(x.dtype, copy=False)


@kernel("Sin", since=7)
def sin(x: np.ndarray) -> np.ndarray:
    return _quiet(np.sin, x)


@kernel("Cos", since=7)
def cos(x: np.ndarray) -> np.ndarray:
    return _quiet(np.cos, x)


@kernel("Tan", since=7)
def tan(x: np.ndarray) -> np.ndarray:
    return _quiet(np.tan, x)


@kernel("Asin", since=7)
def asin(x: np.ndarray) -> np.ndarray:
    return _quiet(np.arcsin, x)


@kernel("Acos", since=7)
def acos(x: np.ndarray) -> np.ndarray:
    return _quiet(np.arccos, x)


@kernel("Atan", since=7)
def atan(x: np.ndarray) -> np.ndarray:
    return _quiet(np.arctan, x)


@kernel("Sinh", since=9)
def sinh(x: np.ndarray) -> np.ndarray:
    return _quiet(np.sinh, x)


@kernel("Cosh", since=9)
def cosh(x: np.ndarray) -> np.ndarray:
    return _quiet(np.cosh, x)
