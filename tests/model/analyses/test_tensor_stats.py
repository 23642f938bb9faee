"""tensor_stats: hand-checked figures, odd dtypes, empty and non-finite arrays, sampling."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xocview.model.analyses import tensor_stats
from xocview.model.analyses.tensor_stats import BINS, stats


def test_hand_checked_figures() -> None:
    # values 0, 0, 1, 3: mean 1, deviations -1 -1 0 2 -> variance 6/4, two zeros of four
    s = stats(np.array([[0, 0], [1, 3]], dtype=np.float32))
    assert s is not None
    assert (s.count, s.sample_count, s.finite_count, s.sampled) == (4, 4, 4, False)
    assert (s.min, s.max, s.mean) == (0.0, 3.0, 1.0)
    assert s.std == pytest.approx(math.sqrt(1.5))
    assert (s.sparsity, s.zero_count, s.nan_count, s.inf_count) == (0.5, 2, 0, 0)
    assert len(s.histogram) == BINS and len(s.bin_edges) == BINS + 1
    assert s.histogram.sum() == 4
    assert (s.bin_edges[0], s.bin_edges[-1]) == (0.0, 3.0)
    assert s.histogram[0] == 2 and s.histogram[-1] == 1  # both zeros first, 3 in the last bar


def test_nan_and_inf_are_counted_and_left_out_of_the_figures() -> None:
    s = stats(np.array([np.nan, np.inf, -np.inf, 2.0, 4.0]))
    assert s is not None
    assert (s.nan_count, s.inf_count, s.finite_count) == (1, 2, 2)
    assert (s.min, s.max, s.mean, s.std) == (2.0, 4.0, 3.0, 1.0)
    assert s.histogram.sum() == 2 and s.sparsity == 0.0


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (np.array([-3, 0, 5, 2], dtype=np.int8), (-3.0, 5.0, 1.0)),
        (np.array([2**62, 2**62], dtype=np.int64), (2.0**62, 2.0**62, 2.0**62)),
        (np.array([True, False, False, True, True]), (0.0, 1.0, 0.6)),
        (np.array([0.5, 1.5], dtype=np.float16), (0.5, 1.5, 1.0)),
    ],
)
def test_integer_bool_and_half_arrays(values: np.ndarray, expected: tuple[float, ...]) -> None:
    s = stats(values)
    assert s is not None
    assert (s.min, s.max) == expected[:2]
    assert s.mean == pytest.approx(expected[2])
    assert s.histogram.sum() == values.size


def test_a_constant_array_has_one_bar() -> None:
    s = stats(np.full((3, 3), 7, dtype=np.int32))
    assert s is not None
    assert (s.min, s.max, s.std) == (7.0, 7.0, 0.0)
    assert np.count_nonzero(s.histogram) == 1 and s.histogram.sum() == 9


@pytest.mark.parametrize(
    "values", [np.zeros((0, 4), dtype=np.float32), np.full(5, np.nan), np.array([np.inf])]
)
def test_nothing_finite_gives_nan_figures_and_no_histogram(values: np.ndarray) -> None:
    s = stats(values)
    assert s is not None
    assert s.count == values.size and s.finite_count == 0
    assert all(math.isnan(v) for v in (s.min, s.max, s.mean, s.std))
    assert s.histogram.size == 0 and s.bin_edges.size == 0
    assert s.nan_count == int(np.isnan(values).sum())


def test_empty_array_has_no_sparsity() -> None:
    s = stats(np.zeros(0))
    assert s is not None and math.isnan(s.sparsity)


@pytest.mark.parametrize(
    "values",
    [np.array(["a", "b"]), np.array([{"x": 1}], dtype=object), np.array([1 + 2j])],
)
def test_values_without_an_order_have_no_statistics(values: np.ndarray) -> None:
    assert stats(values) is None


def test_a_range_wider_than_float64_still_bins() -> None:
    s = stats(np.array([-1e308, 0.0, 1e308]))
    assert s is not None
    assert s.histogram.sum() == 3
    assert (s.bin_edges[0], s.bin_edges[-1]) == (-1e308, 1e308)


def test_chunks_agree_with_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensor_stats, "CHUNK", 7)
    values = np.random.default_rng(0).normal(size=(10, 10)).astype(np.float32)
    s = stats(values[:, ::2])  # not contiguous
    assert s is not None
    want = values[:, ::2].astype(np.float64)
    assert s.mean == pytest.approx(want.mean()) and s.std == pytest.approx(want.std())
    assert np.array_equal(s.histogram, np.histogram(want, bins=BINS)[0])


def test_large_arrays_are_sampled_with_a_fixed_stride(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tensor_stats, "SAMPLE_ABOVE", 100)
    monkeypatch.setattr(tensor_stats, "SAMPLE_SIZE", 10)
    values = np.arange(1000, dtype=np.float32)  # stride 100: 0, 100, ..., 900
    s = stats(values)
    assert s is not None
    assert (s.sampled, s.count, s.sample_count) == (True, 1000, 10)
    assert (s.min, s.max, s.mean) == (0.0, 900.0, 450.0)
    assert s.histogram.sum() == 10
    again = stats(values)
    assert again is not None and np.array_equal(again.histogram, s.histogram)
