"""Normalisation kernels against onnxruntime, and against the spec where onnxruntime has none."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(11)


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def bn_inputs(shape: tuple[int, ...], dtype: Any = np.float32) -> list[np.ndarray | None]:
    c = shape[1]
    var = np.abs(rand(c)) + 0.1
    return [rand(*shape, dtype=dtype)] + [a.astype(dtype) for a in (rand(c), rand(c), rand(c), var)]


@pytest.mark.parametrize("opset", [7, 9, 14, 15])
@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 5), (2, 3, 4, 5), (1, 3, 2, 3, 4), (0, 3, 4)])
def test_batch_norm_inference(opset: int, shape: tuple[int, ...]) -> None:
    check_op("BatchNormalization", bn_inputs(shape), {"epsilon": 1e-3}, opset=opset)


def test_batch_norm_float64_and_float16() -> None:
    check_op("BatchNormalization", bn_inputs((2, 3, 4, 4), np.float64), {}, rtol=1e-10)
    check_op("BatchNormalization", bn_inputs((2, 3, 4, 4), np.float16), {}, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("opset", [1, 6])
def test_batch_norm_legacy_is_inference(opset: int) -> None:
    """onnxruntime has no BatchNormalization before 7; the old attributes change nothing."""
    inputs = bn_inputs((2, 3, 4, 5))
    (expected,) = check_op("BatchNormalization", inputs, {"epsilon": 1e-3}, opset=9)
    attrs: dict[str, Any] = {"epsilon": 1e-3, "is_test": 1, "momentum": 0.5, "spatial": 1}
    if opset == 1:
        attrs["consumed_inputs"] = [0, 0, 0, 1, 1]
    (got,) = ours("BatchNormalization", inputs, attrs, opset=opset)
    np.testing.assert_array_equal(got, expected)


def test_batch_norm_per_activation_parameters() -> None:
    """spatial=0 (opsets 1-8) takes (C, *spatial) statistics: y = (x - m) / sqrt(v + e) * s + b."""
    x = rand(2, 3, 4)
    s, b, m = rand(3, 4), rand(3, 4), rand(3, 4)
    v = np.abs(rand(3, 4)) + 0.1
    (got,) = ours("BatchNormalization", [x, s, b, m, v], {"spatial": 0}, opset=7)
    np.testing.assert_allclose(got, (x - m) / np.sqrt(v + 1e-5) * s + b, rtol=1e-5, atol=1e-6)


def test_batch_norm_training_mode() -> None:
    check_op(
        "BatchNormalization",
        bn_inputs((4, 3, 5, 5)),
        {"training_mode": 1, "momentum": 0.8},
        opset=15,
        num_outputs=3,
    )


@pytest.mark.parametrize("axis", [-1, -2, 1, 0])
@pytest.mark.parametrize("num_outputs", [1, 3])
@pytest.mark.parametrize("with_bias", [True, False])
def test_layer_norm(axis: int, num_outputs: int, with_bias: bool) -> None:
    x = rand(2, 3, 4, 5)
    norm_shape = x.shape[axis % 4 :]
    b = rand(*norm_shape) if with_bias else None
    attrs = {"axis": axis, "epsilon": 1e-3}
    check_op("LayerNormalization", [x, rand(*norm_shape), b], attrs, num_outputs=num_outputs)


@pytest.mark.parametrize("dtype", [np.float64, np.float16])
def test_layer_norm_dtypes(dtype: Any) -> None:
    """stash_type 1 keeps Mean and InvStdDev float32 whatever X's type."""
    tol = 1e-2 if dtype == np.float16 else 1e-6
    inputs = [rand(3, 8, dtype=dtype), rand(8, dtype=dtype), rand(8, dtype=dtype)]
    check_op("LayerNormalization", inputs, {}, num_outputs=3, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(2, 3, 7), (2, 3, 4, 5), (1, 2, 3, 4, 5)])
def test_instance_norm(shape: tuple[int, ...]) -> None:
    check_op("InstanceNormalization", [rand(*shape), rand(shape[1]), rand(shape[1])], {})


def test_instance_norm_opset_1() -> None:
    inputs = [rand(2, 3, 4, 5), rand(3), rand(3)]
    (expected,) = check_op("InstanceNormalization", inputs, {"epsilon": 1e-3})
    (got,) = ours(
        "InstanceNormalization", inputs, {"epsilon": 1e-3, "consumed_inputs": []}, opset=1
    )
    np.testing.assert_array_equal(got, expected)


def test_instance_norm_float64() -> None:
    """onnxruntime's InstanceNormalization is float32 only: compare float64 with it."""
    inputs = [rand(2, 3, 4, 5), rand(3), rand(3)]
    (expected,) = check_op("InstanceNormalization", inputs, {})
    (got,) = ours("InstanceNormalization", [x.astype(np.float64) for x in inputs], {})
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "attrs",
    [
        {"size": 5},
        {"size": 3, "alpha": 0.1, "beta": 0.6, "bias": 2.0},
        {"size": 1, "alpha": 0.5, "beta": 1.0},
        {"size": 9, "alpha": 0.01},
    ],
)
def test_lrn(attrs: dict[str, Any]) -> None:
    check_op("LRN", [rand(2, 7, 4, 5)], attrs)


@pytest.mark.parametrize("shape", [(1, 4, 6), (1, 6, 2, 3, 2)])
def test_lrn_other_ranks_follow_the_spec(shape: tuple[int, ...]) -> None:
    """onnxruntime's LRN takes 4-D input only; the spec allows any (N, C, ...) input."""
    x = rand(*shape)
    (got,) = ours("LRN", [x], {"size": 3, "alpha": 0.2, "beta": 0.75, "bias": 1.0})
    np.testing.assert_allclose(got, lrn_by_definition(x, 3, 0.2, 0.75, 1.0), rtol=1e-5)


def lrn_by_definition(
    x: np.ndarray, size: int, alpha: float, beta: float, bias: float
) -> np.ndarray:
    """The spec's loop: the window runs from c - floor((size-1)/2) to c + ceil((size-1)/2)."""
    c = x.shape[1]
    out = np.empty_like(x)
    for i in range(c):
        lo, hi = max(0, i - (size - 1) // 2), min(c - 1, i + -(-(size - 1) // 2))
        square_sum = np.sum(x[:, lo : hi + 1].astype(np.float64) ** 2, axis=1)
        out[:, i] = x[:, i] / (bias + alpha / size * square_sum) ** beta
    return out


@pytest.mark.parametrize("size", [2, 4])
def test_lrn_even_size_follows_the_spec(size: int) -> None:
    """onnxruntime refuses even sizes; the spec defines them with the longer half after c."""
    x = rand(2, 6, 3, 3)
    (got,) = ours("LRN", [x], {"size": size, "alpha": 0.3, "beta": 0.7, "bias": 1.5})
    np.testing.assert_allclose(got, lrn_by_definition(x, size, 0.3, 0.7, 1.5), rtol=1e-5)


def test_lrn_dtypes() -> None:
    check_op("LRN", [rand(2, 5, 3, 3, dtype=np.float16)], {"size": 3}, rtol=1e-2, atol=1e-3)
    (got,) = ours("LRN", [rand(2, 5, 3, 3, dtype=np.float64)], {"size": 3})
    assert got.dtype == np.float64


@pytest.mark.parametrize("opset", [18, 21])
@pytest.mark.parametrize("num_groups", [1, 2, 6])
def test_group_norm(opset: int, num_groups: int) -> None:
    x = rand(2, 6, 4, 5)
    params = num_groups if opset == 18 else 6
    check_op(
        "GroupNormalization",
        [x, rand(params), rand(params)],
        {"num_groups": num_groups, "epsilon": 1e-3},
        opset=opset,
    )


@pytest.mark.parametrize("opset", [9, 13])
@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_norm(opset: int, axes: list[int] | None) -> None:
    attrs = {} if axes is None else {"axes": axes}
    check_op("MeanVarianceNormalization", [rand(2, 3, 4, 5)], attrs, opset=opset)


def test_float32_in_float32_out() -> None:
    """Python-float attributes must not promote the arithmetic to float64."""
    x = rand(2, 3, 4, 5)
    for op, inputs, attrs in [
        ("BatchNormalization", bn_inputs((2, 3, 4, 5)), {"epsilon": 1e-3}),
        ("LRN", [x], {"size": 3, "alpha": 0.2, "beta": 0.4, "bias": 2.0}),
        ("LayerNormalization", [x, rand(5)], {"epsilon": 1e-3}),
        ("InstanceNormalization", [x, rand(3), rand(3)], {"epsilon": 1e-3}),
    ]:
        (y,) = ours(op, inputs, attrs)
        assert y.dtype == np.float32, op
