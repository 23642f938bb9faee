"""Comparison and boolean kernels: Equal..GreaterOrEqual, Not, And, Or, Xor, Where, IsNaN, IsInf."""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.elementwise import register_legacy
from xocview.executor.registry import kernel


@kernel("Equal", since=7)
def equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Strings too (opset 19): numpy compares object arrays element by element."""
    return np.asarray(np.equal(a, b), dtype=bool)


@kernel("Less", since=7)
def less(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.less(a, b))


@kernel("Greater", since=7)
def greater(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.greater(a, b))


@kernel("LessOrEqual", since=12)
def less_or_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.less_equal(a, b))


@kernel("GreaterOrEqual", since=12)
def greater_or_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.greater_equal(a, b))


@kernel("Not", since=1)
def not_(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_not(x))


@kernel("And", since=7)
def and_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_and(a, b))


@kernel("Or", since=7)
def or_(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_or(a, b))


@kernel("Xor", since=7)
def xor(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.logical_xor(a, b))


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
