"""Adagrad, Adam and Momentum (domain ai.onnx.preview.training) against onnx's
ReferenceEvaluator: onnxruntime's inference build has no training ops."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.executor.ort_reference import ours, reference_run

TRAINING = "ai.onnx.preview.training"
RNG = np.random.default_rng(5)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def step_inputs(n: int, states: int, shape: tuple[int, ...] = (3, 4)) -> list[np.ndarray]:
    """R, T, then X, G and each state for ``n`` tensors (states non-negative: H sums squares)."""
    rate, count = np.array(0.1, np.float32), np.array(3, np.int64)
    xs = [rand(*shape) for _ in range(n)]
    gs = [rand(*shape) for _ in range(n)]
    kept = [np.abs(rand(*shape)) for _ in range(n * states)]
    return [rate, count, *xs, *gs, *kept]


def compare(op: str, inputs: list[np.ndarray], attrs: dict, outputs: int) -> list[np.ndarray]:
    want = reference_run(op, inputs, attrs, opset=1, domain=TRAINING, num_outputs=outputs)
    got = ours(op, inputs, attrs, opset=1, num_outputs=outputs)
    assert len(got) == outputs
    for g, w, x in zip(got, want, inputs[2:], strict=False):
        assert g.shape == x.shape and g.dtype == x.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return got


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize(
    "attrs",
    [{}, {"decay_factor": 0.1, "epsilon": 1e-4, "norm_coefficient": 0.01}],
)
def test_adagrad(n: int, attrs: dict) -> None:
    compare("Adagrad", step_inputs(n, 1), attrs, 2 * n)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize(
    "attrs",
    [
        {},
        {"alpha": 0.8, "beta": 0.5, "epsilon": 1e-3, "norm_coefficient": 0.02},
        {"norm_coefficient_post": 0.1},
    ],
)
def test_adam(n: int, attrs: dict) -> None:
    compare("Adam", step_inputs(n, 2), attrs, 3 * n)


@pytest.mark.parametrize("mode", ["standard", "nesterov"])
@pytest.mark.parametrize("n", [1, 2])
def test_momentum(mode: str, n: int) -> None:
    attrs = {"alpha": 0.9, "beta": 0.7, "mode": mode, "norm_coefficient": 0.01}
    compare("Momentum", step_inputs(n, 1), attrs, 2 * n)


@settings(max_examples=30, deadline=None)
@given(
    count=st.integers(0, 20),
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    alpha=st.floats(0.0, 0.99),
    beta=st.floats(0.01, 0.999),
)
def test_random_steps(count: int, shape: list[int], alpha: float, beta: float) -> None:
    """The first step (T = 0) takes no bias correction and Momentum's beta is 1 there."""
    inputs = step_inputs(1, 2, tuple(shape))
    inputs[1] = np.array(count, np.int64)
    compare("Adam", inputs, {"alpha": alpha, "beta": beta}, 3)
    attrs = {"alpha": alpha, "beta": beta, "mode": "nesterov", "norm_coefficient": 0.0}
    compare("Momentum", inputs[:-1], attrs, 2)


def test_first_momentum_step_uses_the_whole_gradient() -> None:
    r, t = np.array(0.5, np.float32), np.array(0, np.int64)
    x, g, v = np.ones(2, np.float32), np.full(2, 2.0, np.float32), np.full(2, 4.0, np.float32)
    attrs = {"alpha": 0.5, "beta": 0.1, "mode": "standard", "norm_coefficient": 0.0}
    x_new, v_new = ours("Momentum", [r, t, x, g, v], attrs, opset=1, num_outputs=2)
    np.testing.assert_allclose(v_new, 0.5 * 4 + 2)  # beta is 1 on the first step
    np.testing.assert_allclose(x_new, 1 - 0.5 * 4)


def test_float64_stays_float64() -> None:
    inputs = [x.astype(np.float64) if x.dtype == np.float32 else x for x in step_inputs(1, 1)]
    got = compare("Adagrad", inputs, {}, 2)
    assert all(g.dtype == np.float64 for g in got)


def test_refusals() -> None:
    inputs = step_inputs(1, 1)
    with pytest.raises(ValueError, match="mode 'heavy' is not supported"):
        attrs = {"alpha": 0.9, "beta": 0.1, "mode": "heavy", "norm_coefficient": 0.0}
        ours("Momentum", inputs, attrs, opset=1, num_outputs=2)
    with pytest.raises(ValueError, match="expected a multiple of 4"):
        ours("Adam", inputs, opset=1, num_outputs=3)
    with pytest.raises(ValueError, match="G of tensor 0 has shape"):
        ours("Adagrad", [*inputs[:3], rand(2), inputs[4]], opset=1, num_outputs=2)
    ints = [*inputs[:2], *(np.ones(3, np.int32) for _ in range(3))]
    with pytest.raises(ValueError, match="dtype int32 is not supported"):
        ours("Adagrad", ints, opset=1, num_outputs=2)
