"""Random generators: RandomNormal, RandomUniform (and their -Like forms), Bernoulli and
Multinomial.

With a ``seed`` attribute a node gives the same values on every run (numpy's PCG64 seeded with
the seed's bits); without one, each call draws from a fresh generator. No implementation shares
another's stream, so ONNX's expected values for these ops are examples, not targets.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from xocview.executor.ops.constants import onnx_numpy_dtype
from xocview.executor.registry import kernel

__all__ = [
    "bernoulli",
    "multinomial",
    "random_normal",
    "random_normal_like",
    "random_uniform",
    "random_uniform_like",
]

_FLOATS = frozenset({np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)})
_BERNOULLI_OUT = _FLOATS | {
    np.dtype(t) for t in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                          "uint64")
}  # fmt: skip
_INDICES = frozenset({np.dtype(np.int32), np.dtype(np.int64)})


def _generator(seed: float | None) -> np.random.Generator:
    """Seeded by the float's bit pattern, so 1.0 and 1.5 differ and negative seeds work."""
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(int(np.float64(seed).view(np.uint64)))


def _out_dtype(op: str, dtype: int | None, like: np.ndarray | None, allowed: frozenset) -> np.dtype:
    """The output dtype: the ``dtype`` attribute, else the input's; refused outside ``allowed``."""
    chosen = like.dtype if dtype is None and like is not None else onnx_numpy_dtype(dtype or 1, op)
    if chosen not in allowed:
        names = ", ".join(sorted(d.name for d in allowed))
        raise ValueError(f"{op}: dtype {chosen} is not supported; {names} are")
    return chosen


def _shape(op: str, shape: Sequence[int]) -> tuple[int, ...]:
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise ValueError(f"{op}: shape {list(dims)} has a negative dimension")
    return dims


@kernel("RandomNormal", since=1)
def random_normal(
    *,
    shape: Sequence[int],
    dtype: int = 1,
    mean: float = 0.0,
    scale: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """Normal samples of the given mean and standard deviation ``scale``."""
    out = _out_dtype("RandomNormal", dtype, None, _FLOATS)
    values = _generator(seed).normal(mean, scale, _shape("RandomNormal", shape))
    return values.astype(out)


@kernel("RandomUniform", since=1)
def random_uniform(
    *,
    shape: Sequence[int],
    dtype: int = 1,
    low: float = 0.0,
    high: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """Uniform samples in [low, high)."""
    out = _out_dtype("RandomUniform", dtype, None, _FLOATS)
    values = _generator(seed).uniform(low, high, _shape("RandomUniform", shape))
    return values.astype(out)


@kernel("RandomNormalLike", since=1)
def random_normal_like(
    x: np.ndarray,
    *,
    dtype: int | None = None,
    mean: float = 0.0,
    scale: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomNormal of the input's shape; the dtype defaults to the input's (a float)."""
    out = _out_dtype("RandomNormalLike", dtype, x, _FLOATS)
    return _generator(seed).normal(mean, scale, x.shape).astype(out)


@kernel("RandomUniformLike", since=1)
def random_uniform_like(
    x: np.ndarray,
    *,
    dtype: int | None = None,
    low: float = 0.0,
    high: float = 1.0,
    seed: float | None = None,
) -> np.ndarray:
    """RandomUniform of the input's shape; the dtype defaults to the input's (a float)."""
    out = _out_dtype("RandomUniformLike", dtype, x, _FLOATS)
    return _generator(seed).uniform(low, high, x.shape).astype(out)


@kernel("Bernoulli", since=15)
def bernoulli(x: np.ndarray, *, dtype: int | None = None, seed: float | None = None) -> np.ndarray:
    """1 with probability x, else 0, element by element; the dtype defaults to the input's."""
    if x.dtype not in _FLOATS:
        raise ValueError(f"Bernoulli: input dtype {x.dtype} is not supported; floats are")
    out = _out_dtype("Bernoulli", dtype, x, _BERNOULLI_OUT)
    return (_generator(seed).random(x.shape) < x).astype(out)


@kernel("Multinomial", since=7)
def multinomial(
    x: np.ndarray, *, dtype: int = 6, sample_size: int = 1, seed: float | None = None
) -> np.ndarray:
    """For each row of (batch, classes) unnormalised log-probabilities, ``sample_size`` class
    indices drawn by inverting the row's cumulative distribution.

    All rows are searched at once: row b's cumulative probabilities are shifted by b, so one
    sorted array holds every row.
    """
    if x.ndim != 2 or x.dtype not in _FLOATS:
        raise ValueError(
            f"Multinomial: input {x.dtype} of shape {x.shape} is not supported; "
            "a float (batch, classes) matrix is"
        )
    out = _out_dtype("Multinomial", dtype, None, _INDICES)
    batch, classes = x.shape
    if sample_size < 0 or (classes == 0 and batch and sample_size):
        raise ValueError(f"Multinomial: cannot draw {sample_size} samples from {classes} classes")
    logits = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        weights = np.exp(logits - logits.max(axis=1, keepdims=True, initial=-np.inf))
        cdf = np.cumsum(weights, axis=1)
        cdf /= cdf[:, -1:]
    rows = np.arange(batch, dtype=np.float64)[:, None]
    draws = _generator(seed).random((batch, int(sample_size))) + rows
    found = np.searchsorted((cdf + rows).reshape(-1), draws.reshape(-1), side="right")
    index = found.reshape(batch, -1) - np.arange(batch)[:, None] * classes
    return np.clip(index, 0, max(classes - 1, 0)).astype(out)
