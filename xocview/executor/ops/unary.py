"""Element-wise math of one tensor: Sqrt, Exp, Log, rounding, sign, Erf and trigonometry."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from xocview.executor.ops.blockwise import blockwise, erf_block
from xocview.executor.registry import kernel

__all__ = ["erf", "erf_float32", "erf_float64"]

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


def erf_float32(x: np.ndarray) -> np.ndarray:
    """The error function in float32 for float32 and float16 inputs: a rational fit in ~16
    in-place passes over cache-sized blocks (blockwise.erf_block), where erf_float64 makes ~60
    over float64 (GELU's erf was most of a transformer export's time). NaN stays NaN; +-inf
    give +-1."""
    return blockwise(erf_block, np.asarray(x).astype(np.float32, copy=False), 2)


def _quiet(ufunc: Callable[..., np.ndarray], x: np.ndarray) -> np.ndarray:
    """``ufunc(x)`` as an array (never a numpy scalar), without warnings for inf and NaN results
    (log of a negative, overflowing exp), which ONNX defines as IEEE arithmetic gives them."""
    with np.errstate(all="ignore"):
        return np.asarray(ufunc(x))


# Ops that are one numpy ufunc, with the opset they start at. Opset 1 of the first eight had
# ``consumed_inputs``, an in-place hint every version ignores; their kernels accept it.
_UFUNCS: dict[str, tuple[Callable[..., np.ndarray], int]] = {
    "Sqrt": (np.sqrt, 1),
    "Exp": (np.exp, 1),
    "Log": (np.log, 1),
    "Neg": (np.negative, 1),
    "Abs": (np.abs, 1),
    "Reciprocal": (np.reciprocal, 1),
    "Floor": (np.floor, 1),
    "Ceil": (np.ceil, 1),
    "Round": (np.round, 11),  # halves go to the even neighbour, in ONNX as in numpy
    "Sign": (np.sign, 9),
    "Sin": (np.sin, 7),
    "Cos": (np.cos, 7),
    "Tan": (np.tan, 7),
    "Asin": (np.arcsin, 7),
    "Acos": (np.arccos, 7),
    "Atan": (np.arctan, 7),
    "Sinh": (np.sinh, 9),
    "Cosh": (np.cosh, 9),
}


def _ufunc_kernel(op_type: str, ufunc: Callable[..., np.ndarray], since: int) -> None:
    """Register ``ufunc`` as the kernel of ``op_type`` (with ``consumed_inputs`` at opset 1)."""
    if since == 1:

        def run(x: np.ndarray, *, consumed_inputs: list[int] | None = None) -> np.ndarray:
            return _quiet(ufunc, x)

    else:

        def run(x: np.ndarray) -> np.ndarray:  # type: ignore[misc]
            return _quiet(ufunc, x)

    run.__name__ = run.__qualname__ = op_type.lower()
    run.__doc__ = f"ONNX {op_type}: numpy's {ufunc.__name__}, element by element."
    kernel(op_type, since=since)(run)


for _op, (_ufunc, _since) in _UFUNCS.items():
    _ufunc_kernel(_op, _ufunc, _since)


@kernel("Erf", since=9)
def erf(x: np.ndarray) -> np.ndarray:
    """float32 and float16 through erf_float32, the rest through erf_float64."""
    if x.dtype in (np.float32, np.float16):
        return erf_float32(x).astype(x.dtype, copy=False)
    return erf_float64(x).astype(x.dtype, copy=False)
