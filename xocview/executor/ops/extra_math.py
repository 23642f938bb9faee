"""More math kernels: inverse hyperbolic functions, Swish, Shrink, CumProd, Det,
LpNormalization and RMSNormalization.

Acosh, Asinh, Atanh belong with unary.py, Swish and Shrink with activation.py, and the two
normalisations with normalization.py; they live here to keep those modules untouched.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from xocview.executor.ops.activation import sigmoid
from xocview.executor.registry import kernel

__all__ = [
    "cum_prod",
    "det",
    "lp_normalization",
    "rms_normalization",
    "shrink",
    "swish",
]


def _floats_only(op: str, x: np.ndarray) -> None:
    """Raise ValueError ("not supported") unless ``x`` holds floats (ml_dtypes' count too)."""
    if x.dtype.kind not in "fV":
        raise ValueError(f"{op}: dtype {x.dtype} is not supported; expected a float type")


def _axis(axis: int, rank: int, op: str) -> int:
    """A possibly negative axis as an index in ``range(rank)``; ValueError when out of range."""
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for rank {rank}")
    return axis % rank


# --- inverse hyperbolic functions ----------------------------------------------------------------


def _float_ufunc_kernel(op_type: str, ufunc: Callable[..., np.ndarray], since: int) -> None:
    """Register ``ufunc`` for float tensors; out-of-domain inputs give NaN without warnings."""

    def run(x: np.ndarray) -> np.ndarray:
        _floats_only(op_type, x)
        with np.errstate(all="ignore"):
            return np.asarray(ufunc(x))

    run.__name__ = run.__qualname__ = op_type.lower()
    run.__doc__ = f"ONNX {op_type}: numpy's {ufunc.__name__}, element by element."
    kernel(op_type, since=since)(run)


# Opset 22 only added bfloat16: the opset 9 kernels serve both.
for _op, _ufunc in (("Acosh", np.arccosh), ("Asinh", np.arcsinh), ("Atanh", np.arctanh)):
    _float_ufunc_kernel(_op, _ufunc, 9)


# --- activations ---------------------------------------------------------------------------------


@kernel("Swish", since=24)
def swish(x: np.ndarray, *, alpha: float = 1.0) -> np.ndarray:
    """x * sigmoid(alpha * x), in x's dtype."""
    _floats_only("Swish", x)
    return np.asarray(x * sigmoid(np.asarray(x * x.dtype.type(alpha))))


@kernel("Shrink", since=9)
def shrink(x: np.ndarray, *, bias: float = 0.0, lambd: float = 0.5) -> np.ndarray:
    """x + bias below -lambd, x - bias above lambd, 0 between; integers go through float64 and
    come back in their own dtype."""
    if x.dtype.kind not in "iuf":
        raise ValueError(f"Shrink: dtype {x.dtype} is not supported; expected a numeric type")
    wide = x.astype(np.float64) if x.dtype.kind in "iu" else x
    b = wide.dtype.type(bias)
    y = np.where(wide < -lambd, wide + b, np.where(wide > lambd, wide - b, 0))
    return y.astype(x.dtype, copy=False)


# --- CumProd and Det -----------------------------------------------------------------------------


@kernel("CumProd", since=26)
def cum_prod(
    x: np.ndarray, axis: np.ndarray, *, exclusive: int = 0, reverse: int = 0
) -> np.ndarray:
    """Running product along ``axis`` (a one-element int tensor) in x's dtype; ``exclusive``
    starts at 1 and leaves out the element itself, ``reverse`` runs from the end."""
    if x.dtype.kind not in "iuf":
        raise ValueError(f"CumProd: dtype {x.dtype} is not supported; expected a numeric type")
    a = np.asarray(axis)
    if a.size != 1 or a.dtype.kind not in "iu":
        raise ValueError(f"CumProd: axis must be one integer; got {a.dtype} of shape {a.shape}")
    # a rank-0 x has no axis in [-r, r-1]: refused, as onnxruntime and CumSum refuse it
    ax = _axis(int(a.reshape(-1)[0]), x.ndim, "CumProd")
    flip = [slice(None)] * x.ndim
    flip[ax] = slice(None, None, -1)
    data = x[tuple(flip)] if reverse else x
    if exclusive:
        out = np.ones_like(data)
        head = [slice(None)] * x.ndim
        head[ax] = slice(0, -1)
        tail = [slice(None)] * x.ndim
        tail[ax] = slice(1, None)
        np.cumprod(data[tuple(head)], axis=ax, dtype=x.dtype, out=out[tuple(tail)])
    else:
        out = np.cumprod(data, axis=ax, dtype=x.dtype)
    return out[tuple(flip)] if reverse else out


@kernel("Det", since=11)
def det(x: np.ndarray) -> np.ndarray:
    """Determinants of the last two (square) axes, by LU in float64, rounded to x's dtype."""
    _floats_only("Det", x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise ValueError(f"Det: input has shape {list(x.shape)}; expected [*, M, M]")
    return np.asarray(np.linalg.det(x.astype(np.float64))).astype(x.dtype, copy=False)


# --- normalisations ------------------------------------------------------------------------------


@kernel("LpNormalization", since=1)
def lp_normalization(x: np.ndarray, *, axis: int = -1, p: int = 2) -> np.ndarray:
    """x divided by its L1 or L2 norm along ``axis``; where the norm is 0 the output is 0."""
    _floats_only("LpNormalization", x)
    if p not in (1, 2):
        raise ValueError(f"LpNormalization: p {p} is not supported; expected 1 or 2")
    ax = _axis(axis, x.ndim, "LpNormalization")
    if p == 1:
        norm = np.abs(x).sum(axis=ax, keepdims=True, dtype=x.dtype)
    else:
        norm = np.sqrt(np.square(x).sum(axis=ax, keepdims=True, dtype=x.dtype))
    zero = norm == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        y = np.divide(x, np.where(zero, 1, norm).astype(x.dtype, copy=False))
    y[np.broadcast_to(zero, y.shape)] = 0
    return y


_STASH: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}


@kernel("RMSNormalization", since=23)
def rms_normalization(
    x: np.ndarray,
    scale: np.ndarray,
    *,
    axis: int = -1,
    epsilon: float = 1e-5,
    stash_type: int = 1,
) -> np.ndarray:
    """x / sqrt(mean(x^2) + epsilon) over the axes from ``axis`` on, rounded to x's dtype, times
    ``scale`` (broadcast); the output has scale's dtype.

    The statistics are computed in the wider of x's dtype and ``stash_type`` (1 float, 10 half,
    11 double), as LayerNormalization does here.
    """
    _floats_only("RMSNormalization", x)
    if stash_type not in _STASH:
        raise ValueError(
            f"RMSNormalization: stash_type {stash_type} is not supported; "
            "expected 1 (float), 10 (half) or 11 (double)"
        )
    start = _axis(axis, x.ndim, "RMSNormalization")
    dtype = np.promote_types(x.dtype, _STASH[stash_type])
    xs = x.astype(dtype, copy=False)
    axes = tuple(range(start, x.ndim))
    mean_square = np.square(xs).mean(axis=axes, keepdims=True, dtype=dtype)
    mean_square += dtype.type(epsilon)
    normalized = (xs / np.sqrt(mean_square)).astype(x.dtype, copy=False)
    return np.asarray(normalized * scale).astype(scale.dtype, copy=False)
