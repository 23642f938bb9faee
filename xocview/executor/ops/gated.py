"""Gated activations: SwiGLU (opset 28), Swish of a gate times a linear value."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["swiglu"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-z)) through exp(-|z|), which cannot overflow."""
    e = np.exp(-np.abs(z))
    r = 1 / (1 + e)
    return np.where(z < 0, e * r, r)


@kernel("SwiGLU", since=28)
def swiglu(a: np.ndarray, b: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """Y = A * sigmoid(alpha * A) * B, A and B of one shape (no broadcasting).

    The sigmoid is computed in at least float32 and rounded to the input dtype before the two
    products, as the reference's Swish does: float16 keeps the products' rounding points.
    """
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        raise ValueError(
            f"SwiGLU: input dtype {a.dtype} is not supported; expected float16, bfloat16, "
            "float32 or float64"
        )
    if a.dtype != b.dtype:
        raise ValueError(f"SwiGLU: A is {a.dtype} and B is {b.dtype}; they must be one dtype")
    if a.shape != b.shape:
        raise ValueError(
            f"SwiGLU: A has shape {a.shape} and B {b.shape}; they must be equal (no broadcasting)"
        )
    work = np.promote_types(a.dtype, np.float32)
    gate = _sigmoid(a.astype(work) * work.type(alpha)).astype(a.dtype)
    return np.asarray(a * gate * b, dtype=a.dtype)
