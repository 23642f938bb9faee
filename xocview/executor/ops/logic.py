"""Comparison and boolean kernels: Equal..GreaterOrEqual, Not, And, Or, Xor, Where, IsNaN, IsInf."""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.elementwise import binary_ufunc_kernel, register_legacy
from xocview.executor.registry import kernel


@kernel("Equal", since=7)
def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Strings too (opset 19): numpy compares object arrays element by element."""
    return np.asarray(np.equal(a, b), dtype=bool)


less = binary_ufunc_kernel("Less", np.less, 7)
greater = binary_ufunc_kernel("Greater", np.greater, 7)
binary_ufunc_kernel("LessOrEqual", np.less_equal, 12)
binary_ufunc_kernel("GreaterOrEqual", np.greater_equal, 12)
and_ = binary_ufunc_kernel("And", np.logical_and, 7)
or_ = binary_ufunc_kernel("Or", np.logical_or, 7)
xor = binary_ufunc_kernel("Xor", np.logical_xor, 7)


@kernel("Not", since=1)
def not_(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_not(x))


@kernel("Where", since=9)
def where(condition: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.where(condition, x, y)


@kernel("IsNaN", since=9)
def is_nan(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.isnan(x))


@kernel("IsInf", since=10)
def is_inf(x: np.ndarray, *, detect_negative: int = 1, detect_positive: int = 1) -> np.ndarray:
    if detect_negative and detect_positive:
        return np.asarray(np.isinf(x))
    if detect_positive:
        return np.asarray(np.isposinf(x))
    if detect_negative:
        return np.asarray(np.isneginf(x))
    return np.zeros(x.shape, dtype=bool)


for _op, _modern in (
    ("Equal", equal),
    ("Less", less),
    ("Greater", greater),
    ("And", and_),
    ("Or", or_),
    ("Xor", xor),
):
    register_legacy(_op, _modern, consumed=False)
