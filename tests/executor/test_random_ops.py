"""RandomNormal, RandomUniform, their -Like forms, Bernoulli and Multinomial: no two
implementations share a random stream, so these check shapes, dtypes, ranges, moments and
seeding rather than values."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from tests.executor.ort_reference import ort_run, ours

N = 200_000  # samples for the moment checks: standard errors near 0.002


def draw(op: str, inputs: list[np.ndarray], attrs: dict, opset: int = 22) -> np.ndarray:
    (out,) = ours(op, inputs, attrs, opset=opset)
    return out


@pytest.mark.parametrize(
    ("dtype", "numpy"),
    [
        (TensorProto.FLOAT, np.float32),
        (TensorProto.DOUBLE, np.float64),
        (TensorProto.FLOAT16, np.float16),
    ],
)
def test_random_normal(dtype: int, numpy: type) -> None:
    y = draw(
        "RandomNormal", [], {"shape": [N // 100, 100], "dtype": dtype, "mean": 2.0, "scale": 3.0}
    )
    assert y.shape == (N // 100, 100) and y.dtype == numpy
    assert abs(y.astype(np.float64).mean() - 2.0) < 0.05
    assert abs(y.astype(np.float64).std() - 3.0) < 0.05


def test_random_uniform() -> None:
    y = draw("RandomUniform", [], {"shape": [N], "low": -2.0, "high": 6.0})
    assert y.dtype == np.float32 and y.shape == (N,)
    assert y.min() >= -2.0 and y.max() <= 6.0
    assert abs(y.mean() - 2.0) < 0.05 and abs(y.var() - 64 / 12) < 0.1
    counts = np.histogram(y, bins=8, range=(-2, 6))[0]
    assert np.all(np.abs(counts / N - 1 / 8) < 0.01)


def test_like_forms_take_shape_and_dtype_from_the_input() -> None:
    x = np.zeros((4, 5, 6), np.float64)
    y = draw("RandomNormalLike", [x], {})
    assert y.shape == x.shape and y.dtype == np.float64
    y = draw("RandomUniformLike", [x], {"dtype": TensorProto.FLOAT16, "low": 5.0, "high": 7.0})
    assert y.shape == x.shape and y.dtype == np.float16 and y.min() >= 5 and y.max() <= 7
    y = draw("RandomUniformLike", [np.zeros((3, 2), np.int64)], {"dtype": TensorProto.FLOAT})
    assert y.dtype == np.float32  # an integer input is fine when dtype says float


def test_like_forms_agree_with_onnxruntime_on_shape_and_dtype() -> None:
    x = np.zeros((2, 3), np.float32)
    for op in ("RandomNormalLike", "RandomUniformLike"):
        (want,) = ort_run(op, [x], {"seed": 1.0}, opset=17)
        got = draw(op, [x], {"seed": 1.0}, opset=17)
        assert got.shape == want.shape and got.dtype == want.dtype


@pytest.mark.parametrize(
    ("op", "inputs", "attrs"),
    [
        ("RandomNormal", [], {"shape": [3, 4]}),
        ("RandomUniform", [], {"shape": [3, 4]}),
        ("RandomNormalLike", [np.zeros((3, 4), np.float32)], {}),
        ("RandomUniformLike", [np.zeros((3, 4), np.float32)], {}),
        ("Bernoulli", [np.full((3, 4), 0.5, np.float32)], {}),
        ("Multinomial", [np.zeros((3, 4), np.float32)], {"sample_size": 5}),
    ],
)
def test_seeding(op: str, inputs: list[np.ndarray], attrs: dict) -> None:
    """The same seed gives the same values; other seeds (and no seed) give others."""
    first = draw(op, inputs, {**attrs, "seed": 7.0})
    np.testing.assert_array_equal(first, draw(op, inputs, {**attrs, "seed": 7.0}))
    others = [draw(op, inputs, {**attrs, "seed": s}) for s in (8.0, 7.5, -7.0)]
    unseeded = [draw(op, inputs, attrs) for _ in range(3)]
    assert any(not np.array_equal(first, o) for o in others)
    assert any(not np.array_equal(unseeded[0], u) for u in unseeded[1:])


def test_bernoulli() -> None:
    x = np.tile(np.array([0.0, 0.25, 0.5, 1.0], np.float32), (N // 4, 1))
    y = draw("Bernoulli", [x], {})
    assert y.dtype == np.float32 and y.shape == x.shape
    assert set(np.unique(y).tolist()) <= {0.0, 1.0}
    np.testing.assert_array_equal(y[:, 0], 0)  # p = 0 and p = 1 are exact
    np.testing.assert_array_equal(y[:, 3], 1)
    np.testing.assert_allclose(y.mean(axis=0), [0, 0.25, 0.5, 1], atol=0.01)


@pytest.mark.parametrize(
    ("dtype", "numpy"),
    [(TensorProto.DOUBLE, np.float64), (TensorProto.INT32, np.int32), (TensorProto.BOOL, np.bool_)],
)
def test_bernoulli_dtype(dtype: int, numpy: type) -> None:
    y = draw("Bernoulli", [np.full(1000, 0.5)], {"dtype": dtype}, opset=15)
    assert y.dtype == numpy and set(np.unique(y.astype(np.int64)).tolist()) == {0, 1}


def test_multinomial() -> None:
    probs = np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25], [0.0, 0.0, 0.0, 1.0]])
    with np.errstate(divide="ignore"):  # log(0) = -inf: a class never drawn
        logits = np.log(probs).astype(np.float32)
    y = draw("Multinomial", [logits], {"sample_size": N // 10}, opset=7)
    assert y.shape == (3, N // 10) and y.dtype == np.int32
    freq = np.stack([np.bincount(row, minlength=4) for row in y]) / (N // 10)
    np.testing.assert_allclose(freq, probs, atol=0.01)
    y = draw("Multinomial", [logits + 50], {"dtype": TensorProto.INT64}, opset=7)
    assert y.shape == (3, 1) and y.dtype == np.int64 and y[2, 0] == 3


def test_multinomial_agrees_with_onnxruntime_on_shape_and_dtype() -> None:
    x = np.zeros((2, 5), np.float32)
    for attrs in ({"sample_size": 4}, {"sample_size": 3, "dtype": TensorProto.INT64}):
        (want,) = ort_run("Multinomial", [x], attrs, opset=7)
        got = draw("Multinomial", [x], attrs, opset=7)
        assert got.shape == want.shape and got.dtype == want.dtype


def test_unsupported_dtypes_are_refused() -> None:
    with pytest.raises(ValueError, match="dtype int32 is not supported"):
        draw("RandomNormal", [], {"shape": [2], "dtype": TensorProto.INT32})
    with pytest.raises(ValueError, match="dtype int64 is not supported"):
        draw("RandomUniformLike", [np.zeros(2, np.int64)], {})
    with pytest.raises(ValueError, match="dtype float32 is not supported"):
        draw("Multinomial", [np.zeros((1, 2), np.float32)], {"dtype": TensorProto.FLOAT}, opset=7)
    with pytest.raises(ValueError, match="input dtype int64 is not supported"):
        draw("Bernoulli", [np.zeros(2, np.int64)], {})
    with pytest.raises(ValueError, match="not supported"):
        draw("Multinomial", [np.zeros(3, np.float32)], {}, opset=7)
