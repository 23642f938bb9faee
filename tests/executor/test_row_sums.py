"""Row sums by BLAS agree with numpy's sums, for every dtype and shape the kernels give them."""

from __future__ import annotations

import numpy as np
import pytest

from xocview.executor.ops.row_sums import row_sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 750), (1, 4, 8, 8), (0, 4), (4, 0)])
def test_row_sums_match_numpy(dtype: type, shape: tuple[int, ...]) -> None:
    x = (np.random.default_rng(1).standard_normal(shape) * 10).astype(dtype)
    for keep in (True, False):
        got = row_sums(x, keep)
        want = np.sum(x, axis=-1, keepdims=keep, dtype=x.dtype)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5 if dtype != np.float16 else 1e-2)


def test_non_contiguous_rows_and_special_values() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(0, 2, 1)
    np.testing.assert_array_equal(row_sums(x), x.sum(-1, keepdims=True))
    y = np.array([[1.0, np.inf], [np.nan, 1.0], [np.inf, -np.inf]], np.float32)
    got = row_sums(y, keepdims=False)
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2])
