"""Sums along the last axis as matrix-vector products.

numpy's add.reduce along a contiguous last axis runs 4-6x slower than BLAS's gemv against a
vector of ones (42 us against 9 us for 750 rows of 256 float32): Softmax, LayerNormalization
and the ReduceMean of RMS norms all sum rows. BLAS accumulates in the input's precision in
several lanes, as onnxruntime's kernels do.
"""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["row_sums"]

_BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


@functools.lru_cache(maxsize=64)
def _ones(n: int, dtype: np.dtype) -> np.ndarray:
    ones = np.ones(n, dtype)
    ones.flags.writeable = False
    return ones


def row_sums(x: np.ndarray, keepdims: bool = True) -> np.ndarray:
    """The sum over the last axis, in x's dtype (float32/float64 by BLAS, others by numpy)."""
    if x.dtype not in _BLAS_TYPES or x.ndim == 0 or x.size == 0:
        return np.asarray(np.sum(x, axis=-1, keepdims=keepdims, dtype=x.dtype))
    sums = np.matmul(x, _ones(x.shape[-1], x.dtype))
    return sums[..., None] if keepdims else sums
