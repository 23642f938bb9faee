"""The tree ensembles' post transforms, with onnxruntime's formulas, row-wise: what turns
the trees' summed votes into the scores an op outputs."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TRANSFORMS", "finish_regression", "logistic", "probit", "transform"]

TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")  # TreeEnsemble's numbering


def logistic(v: np.ndarray) -> np.ndarray:
    e = 1.0 / (1.0 + np.exp(-np.abs(v)))
    return np.where(v < 0, 1.0 - e, e)


def probit(v: np.ndarray) -> np.ndarray:
    """sqrt(2) * erfinv(2v - 1) with the closed-form approximation onnxruntime uses, in
    float32 as it computes it (near v = 0.5 the float64 result differs by 1e-4)."""
    f = np.float32
    x = f(2) * v.astype(f) - f(1)
    sign = np.where(x < 0, f(-1), f(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        log = np.log((f(1) - x) * (f(1) + x))
        a = f(2) / (f(3.14159) * f(0.147)) + f(0.5) * log
        inner = -a + np.sqrt(a * a - f(1) / f(0.147) * log)
        return (f(1.41421356) * sign * np.sqrt(inner)).astype(np.float64)


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_zero(v: np.ndarray) -> np.ndarray:
    """Softmax that leaves (near-)zero scores at zero; a row of zeros stays zero."""
    big = np.abs(v) > 1e-7
    top = v.max(axis=1, keepdims=True)
    e = np.where(big, np.exp(v - top), v * np.exp(-top))
    total = np.where(big, e, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total == 0, 0.0, e / np.where(total == 0, 1.0, total))


def transform(v: np.ndarray, post: str) -> np.ndarray:
    if post == "LOGISTIC":
        return logistic(v)
    if post == "SOFTMAX":
        return _softmax(v)
    if post == "SOFTMAX_ZERO":
        return _softmax_zero(v)
    if post == "PROBIT":
        return probit(v)
    return v


def finish_regression(
    scores: np.ndarray, has: np.ndarray, base: Any, how: str, trees: int, post: str
) -> np.ndarray:
    """Average, base values and post transform as onnxruntime applies them: one target adds
    a single base value and only PROBIT changes it; several add base values of their length
    (to the targets some leaf voted for) and take any transform."""
    targets = scores.shape[1]
    base_arr = np.asarray(base if base is not None else [], dtype=np.float64).reshape(-1)
    if how == "AVERAGE":
        scores = scores / max(trees, 1)
    if targets == 1:
        if base_arr.size == 1:
            scores = scores + base_arr[0]
        return probit(scores) if post == "PROBIT" else scores
    if base_arr.size == targets:
        scores = scores + base_arr
    # A target no leaf voted for stays 0, base value or not: onnxruntime writes it as unset.
    return transform(np.where(has, scores, 0.0), post)
