"""Unique against onnxruntime: flattened and per axis, sorted and in first-occurrence order,
all four outputs, for integer, float and string tensors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(11)


def small_ints(*shape: int, high: int = 4, dtype: type = np.int64) -> np.ndarray:
    """Few distinct values, so that duplicates (and duplicate subtensors) are common."""
    return RNG.integers(0, high, shape).astype(dtype)


def check(x: np.ndarray, attrs: dict) -> list[np.ndarray]:
    return check_op("Unique", [x], attrs, opset=11, num_outputs=4)


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("dtype", [np.int64, np.int8, np.float32, np.float64])
def test_flattened(sorted_: int, dtype: type) -> None:
    check(small_ints(3, 4, 5, high=7, dtype=dtype), {"sorted": sorted_})


@pytest.mark.parametrize("sorted_", [0, 1])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_per_axis(sorted_: int, axis: int) -> None:
    check(small_ints(4, 5, 3, high=2), {"sorted": sorted_, "axis": axis})


@pytest.mark.parametrize("sorted_", [0, 1])
def test_strings(sorted_: int) -> None:
    words = np.array(["pear", "fig", "apple", "fig", "pear", "kiwi"], dtype=object)
    check(words, {"sorted": sorted_})
    check(words.reshape(3, 2), {"sorted": sorted_})


def test_string_rows_per_axis() -> None:
    """numpy's unique takes no object arrays with an axis; the kernel codes them first."""
    x = np.array([["b", "a"], ["a", "c"], ["b", "a"], ["a", "b"]], dtype=object)
    y, indices, inverse, counts = ours("Unique", [x], {"axis": 0}, opset=11, num_outputs=4)
    np.testing.assert_array_equal(y, x[[3, 1, 0]])
    np.testing.assert_array_equal(indices, [3, 1, 0])
    np.testing.assert_array_equal(inverse, [2, 1, 2, 0])
    np.testing.assert_array_equal(counts, [1, 1, 2])
    y, indices, inverse, counts = ours(
        "Unique", [x], {"axis": 0, "sorted": 0}, opset=11, num_outputs=4
    )
    np.testing.assert_array_equal(y, x[[0, 1, 3]])
    np.testing.assert_array_equal(inverse, [0, 1, 0, 2])
    np.testing.assert_array_equal(counts, [2, 1, 1])


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    high=st.integers(1, 6),
    sorted_=st.sampled_from([0, 1]),
    axis_pick=st.one_of(st.none(), st.integers(-4, 3)),
    seed=st.integers(0, 2**16),
)
def test_random_shapes(
    shape: list[int], high: int, sorted_: int, axis_pick: int | None, seed: int
) -> None:
    x = np.random.default_rng(seed).integers(0, high, shape).astype(np.float32)
    attrs: dict = {"sorted": sorted_}
    if axis_pick is not None:
        attrs["axis"] = axis_pick % len(shape) - (len(shape) if axis_pick < 0 else 0)
    check(x, attrs)


def test_outputs_are_consistent() -> None:
    """Y[inverse] rebuilds X; indices point at first occurrences; counts add up."""
    x = small_ints(6, 4, high=3)
    y, indices, inverse, counts = ours("Unique", [x], {"axis": 1, "sorted": 0}, num_outputs=4)
    np.testing.assert_array_equal(np.take(y, inverse, axis=1), x)
    np.testing.assert_array_equal(np.take(x, indices, axis=1), y)
    assert counts.sum() == x.shape[1]
    assert list(indices) == sorted(indices)
    assert all(a.dtype == np.int64 for a in (indices, inverse, counts))


def test_edge_cases() -> None:
    y, indices, inverse, counts = ours("Unique", [np.zeros(0, np.float32)], num_outputs=4)
    assert y.shape == indices.shape == inverse.shape == counts.shape == (0,)
    y, indices, inverse, counts = ours("Unique", [np.zeros((3, 0))], {"axis": 0}, num_outputs=4)
    assert y.shape == (1, 0) and list(inverse) == [0, 0, 0] and list(counts) == [3]
    y, *_ = ours("Unique", [np.array(7.0)], num_outputs=4)  # a scalar flattens to one value
    np.testing.assert_array_equal(y, [7.0])
    nan = np.array([np.nan, 1.0, np.nan], np.float32)  # NaNs count as one value (numpy's rule)
    y, _, inverse, counts = ours("Unique", [nan], num_outputs=4)
    assert y.size == 2 and list(counts) == [1, 2] and list(inverse) == [1, 0, 1]


def test_bad_axis_is_refused() -> None:
    with pytest.raises(ValueError, match="axis 2 is out of range"):
        ours("Unique", [small_ints(2, 3)], {"axis": 2}, num_outputs=4)
