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
def _filled(n: int, dtype: np.dtype, weight: float) -> np.ndarray:
    vector = np.full(n, weight, dtype)
    vector.flags.writeable = False
    return vector


def row_sums(x: np.ndarray, keepdims: bool = True, weight: float = 1.0) -> np.ndarray:
    """The sum over the last axis times ``weight`` (1 / n: the mean), in x's dtype (float32
    and float64 by BLAS, others by numpy)."""
    if x.dtype not in _BLAS_TYPES or x.ndim == 0 or x.size == 0:
        sums = np.asarray(np.sum(x, axis=-1, keepdims=keepdims, dtype=x.dtype))
        if weight != 1.0:
            sums = np.asarray(sums * weight, dtype=x.dtype)
        return sums
    sums = np.matmul(x, _filled(x.shape[-1], x.dtype, weight))
    return sums[..., None] if keepdims else sums
