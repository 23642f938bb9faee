"""Row sums by BLAS agree with numpy's sums, for every dtype and shape the kernels give them."""

from __future__ import annotations

import numpy as np
import pytest

from xocview.executor.ops.row_sums import row_sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 750), (1, 4, 8, 8), (0, 4), (4, 0)])
def test_row_sums_match_numpy(dtype: type, shape: tuple[int, ...]) -> None:
    x = (np.random.default_rng(1).standard_normal(shape) * 10).astype(dtype)
    exact = np.sum(x.astype(np.float64), axis=-1)
    # a float sum is as good as its dtype's epsilon times the sum of magnitudes; ints exact
    eps = np.finfo(dtype).eps if np.dtype(dtype).kind == "f" else 0.0
    bound = 4 * eps * np.abs(x.astype(np.float64)).sum(-1)
    for keep in (True, False):
        got = row_sums(x, keep)
        want = np.sum(x, axis=-1, keepdims=keep, dtype=x.dtype)
        assert got.shape == want.shape and got.dtype == want.dtype
        flat = got.reshape(exact.shape).astype(np.float64)
        assert np.all(np.abs(flat - exact) <= bound)


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # inf - inf, as np.sum warns
def test_non_contiguous_rows_and_special_values() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4).transpose(0, 2, 1)
    np.testing.assert_array_equal(row_sums(x), x.sum(-1, keepdims=True))
    y = np.array([[1.0, np.inf], [np.nan, 1.0], [np.inf, -np.inf]], np.float32)
    got = row_sums(y, keepdims=False)
    assert got[0] == np.inf and np.isnan(got[1]) and np.isnan(got[2])
