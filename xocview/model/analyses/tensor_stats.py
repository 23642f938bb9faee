"""Summary statistics of a weight's values: range, mean, spread, sparsity and a histogram."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

__all__ = ["BINS", "CHUNK", "SAMPLE_ABOVE", "SAMPLE_SIZE", "TensorStats", "stats"]

BINS = 32  # histogram bars over the finite range
SAMPLE_ABOVE = 50_000_000  # arrays with more elements are summarised from a strided sample
SAMPLE_SIZE = 1 << 22  # about this many elements in that sample
CHUNK = 1 << 20  # elements converted to float64 at a time, so memory stays bounded


@dataclass(frozen=True)
class TensorStats:
    """What ``stats`` found.

    ``min``, ``max``, ``mean`` and ``std`` (population, ddof=0) are over the finite values and
    are NaN when there are none. ``sparsity`` is the fraction of exact zeros among all values
    looked at. When ``sampled`` is true every figure except ``count`` comes from
    ``sample_count`` evenly strided elements. ``histogram`` has ``BINS`` counts of the finite
    values between ``bin_edges`` (``BINS + 1`` edges); both are empty when no value is finite.
    """

    count: int
    sample_count: int
    sampled: bool
    finite_count: int
    min: float
    max: float
    mean: float
    std: float
    sparsity: float
    zero_count: int
    nan_count: int
    inf_count: int
    histogram: np.ndarray
    bin_edges: np.ndarray


def stats(array: np.ndarray) -> TensorStats | None:
    """Statistics of ``array``, or None when its values are not real numbers (str, object,
    complex, structured): such values have no order, so min, max and a histogram mean nothing.

    Integer and bool arrays are read as float64. Empty and all-NaN arrays give NaN statistics
    and an empty histogram, never an exception. Works chunk by chunk in two passes, so a
    memory-mapped weight is never copied whole.
    """
    array = np.asarray(array)
    if not _is_real(array.dtype):
        return None
    count = int(array.size)
    flat = array.reshape(-1)  # a view for contiguous arrays (memmaps included)
    sampled = count > SAMPLE_ABOVE
    if sampled:
        flat = flat[:: math.ceil(count / SAMPLE_SIZE)]
    n = int(flat.size)
    lo, hi, total, finite, zeros, nans = _first_pass(flat)
    if finite:
        mean = total / finite
        squares, counts, edges = _second_pass(flat, mean, lo, hi)
        std = math.sqrt(squares / finite)
    else:
        lo = hi = mean = std = math.nan
        counts, edges = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return TensorStats(
        count=count,
        sample_count=n,
        sampled=sampled,
        finite_count=finite,
        min=lo,
        max=hi,
        mean=mean,
        std=std,
        sparsity=zeros / n if n else math.nan,
        zero_count=zeros,
        nan_count=nans,
        inf_count=n - finite - nans,
        histogram=counts,
        bin_edges=edges,
    )


def _first_pass(flat: np.ndarray) -> tuple[float, float, float, int, int, int]:
    """Min, max and sum of the finite values; counts of finite values, zeros and NaNs."""
    lo, hi, total, finite, zeros, nans = math.inf, -math.inf, 0.0, 0, 0, 0
    for chunk in _chunks(flat):
        zeros += int(np.count_nonzero(chunk == 0))
        nans += int(np.count_nonzero(np.isnan(chunk)))
        values = chunk[np.isfinite(chunk)]
        if values.size:
            finite += int(values.size)
            lo, hi = min(lo, float(values.min())), max(hi, float(values.max()))
            total += float(values.sum())
    return lo, hi, total, finite, zeros, nans


def _second_pass(
    flat: np.ndarray, mean: float, lo: float, hi: float
) -> tuple[float, np.ndarray, np.ndarray]:
    """Sum of squared deviations from ``mean`` (stabler than sum of squares) and the histogram.

    Bins are cut by hand rather than by ``np.histogram``, which refuses ranges too narrow for
    their magnitude (a constant 2**62) or too wide for float64 (-1e308 to 1e308).
    """
    if hi == lo:  # one value: centre it in a bar of width 1, or wider where 1 is below ulp
        half = max(0.5, abs(lo) * 2.0**-40)
        lo, hi = lo - half, hi + half
    scale = 1.0 if math.isfinite(hi - lo) else 0.5
    width = hi * scale - lo * scale
    per_unit = BINS / width
    squares = 0.0
    counts = np.zeros(BINS, dtype=np.int64)
    for chunk in _chunks(flat):
        values = chunk[np.isfinite(chunk)]
        if not values.size:
            continue
        with np.errstate(over="ignore"):  # only float64 weights beyond 1e154 can overflow
            squares += float(np.square(values - mean).sum())
        bins = ((values * scale - lo * scale) * per_unit).astype(np.int64)
        counts += np.bincount(np.clip(bins, 0, BINS - 1), minlength=BINS)
    edges = (lo * scale + (np.arange(BINS + 1) / BINS) * width) / scale
    edges[0] = lo
    edges[-1] = hi
    return squares, counts, edges


def _chunks(flat: np.ndarray) -> Iterator[np.ndarray]:
    """``flat`` as float64 pieces of at most ``CHUNK`` elements."""
    for start in range(0, flat.size, CHUNK):
        yield flat[start : start + CHUNK].astype(np.float64)


def _is_real(dtype: np.dtype) -> bool:
    """Bool, integer and float dtypes, plus extension floats (bfloat16, float8) from ml_dtypes."""
    if dtype.kind in "biuf":
        return True
    if dtype.kind != "V" or dtype.fields is not None:
        return False
    try:
        np.zeros(1, dtype=dtype).astype(np.float64)
    except (TypeError, ValueError):
        return False
    return True
