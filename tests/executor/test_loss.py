"""Loss kernels against onnxruntime, and against the spec for what it leaves to us."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.ort_reference import check_op, ours

RNG = np.random.default_rng(23)

SHAPES = [(4, 3), (2, 5, 3), (2, 3, 2, 4), (1, 4, 2, 1, 3, 2)]
REDUCTIONS = ["none", "sum", "mean"]


def rand(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return RNG.standard_normal(shape).astype(dtype)


def labels(shape: tuple[int, ...], dtype: Any = np.int64) -> np.ndarray:
    """Random class indices for scores of ``shape`` (N, C, d1, ...)."""
    return RNG.integers(0, shape[1], (shape[0], *shape[2:])).astype(dtype)


@pytest.mark.parametrize("op", ["NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore", [None, 1])
def test_loss_matches_onnxruntime(
    op: str, shape: tuple[int, ...], reduction: str, weighted: bool, ignore: int | None
) -> None:
    inputs: list[np.ndarray | None] = [rand(*shape), labels(shape)]
    if weighted:
        inputs.append(np.abs(rand(shape[1])) + 0.1)
    attrs: dict[str, Any] = {"reduction": reduction}
    if ignore is not None:
        attrs["ignore_index"] = ignore
    outputs = 2 if op == "SoftmaxCrossEntropyLoss" else 1
    check_op(op, inputs, attrs, opset=13, num_outputs=outputs)


@pytest.mark.parametrize("opset", [12, 13])
def test_loss_float64_int32_targets(opset: int) -> None:
    shape = (3, 4, 5)
    x, t, w = rand(*shape, dtype=np.float64), labels(shape, np.int32), rand(4, dtype=np.float64)
    attrs = {"reduction": "mean", "ignore_index": -1}
    t[0, 0] = -1
    check_op("NegativeLogLikelihoodLoss", [x, t, w], attrs, opset=opset, rtol=1e-10)
    check_op("SoftmaxCrossEntropyLoss", [x, t, w], attrs, opset=opset, num_outputs=2, rtol=1e-10)


def test_float16_computed_wide() -> None:
    """float16 in and out, computed in float32 and rounded once."""
    shape = (8, 5, 6)
    x, t = rand(*shape, dtype=np.float16), labels(shape)
    for reduction in REDUCTIONS:
        attrs = {"reduction": reduction}
        (got,) = ours("NegativeLogLikelihoodLoss", [x, t], attrs, opset=22)
        (wide,) = ours("NegativeLogLikelihoodLoss", [x.astype(np.float32), t], attrs, opset=22)
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, wide.astype(np.float16))
        loss, logp = ours("SoftmaxCrossEntropyLoss", [x, t], attrs, num_outputs=2)
        assert loss.dtype == logp.dtype == np.float16
        assert logp.shape == shape


def test_sce_log_softmax_is_stable() -> None:
    """Huge scores do not overflow; an ignored target's -inf log-probability gives no NaN."""
    x = np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, -np.inf]], dtype=np.float32)
    t = np.array([0, 2])
    loss, logp = ours(
        "SoftmaxCrossEntropyLoss", [x, t], {"reduction": "none", "ignore_index": 2}, num_outputs=2
    )
    np.testing.assert_allclose(logp[0], [0.0, -1000.0, -2000.0])
    np.testing.assert_allclose(loss, [0.0, 0.0])


def test_mean_without_weight_skips_ignored() -> None:
    """The mean divides by the targets not ignored, as the spec's function body does."""
    x = np.array([[-1.0, -2.0], [-3.0, -4.0], [-5.0, -6.0]], dtype=np.float32)
    t = np.array([0, 1, 1])
    (got,) = ours("NegativeLogLikelihoodLoss", [x, t], {"ignore_index": 1})
    np.testing.assert_allclose(got, 1.0)
    (got,) = ours("NegativeLogLikelihoodLoss", [x, t], {"ignore_index": -1})
    np.testing.assert_allclose(got, (1 + 4 + 6) / 3)


def test_no_samples() -> None:
    """onnxruntime refuses N = 0; the spec's sums give an empty loss, 0, and 0 / 0 = NaN."""
    x, t = rand(0, 3, 2), np.zeros((0, 2), dtype=np.int64)
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        assert ours(op, [x, t], {"reduction": "none"})[0].shape == (0, 2)
        assert ours(op, [x, t], {"reduction": "sum"})[0] == 0
        assert np.isnan(ours(op, [x, t], {"reduction": "mean"})[0])


def test_refusals_name_the_problem() -> None:
    x, t = rand(2, 3), np.array([0, 1])
    with pytest.raises(ValueError, match="reduction 'max'"):
        ours("NegativeLogLikelihoodLoss", [x, t], {"reduction": "max"})
    with pytest.raises(ValueError, match="SoftmaxCrossEntropyLoss: target has shape"):
        ours("SoftmaxCrossEntropyLoss", [x, np.array([0, 1, 2])])
    with pytest.raises(ValueError, match="weight has shape"):
        ours("NegativeLogLikelihoodLoss", [x, t, rand(2)])
    with pytest.raises(ValueError, match="expected int32 or int64"):
        ours("NegativeLogLikelihoodLoss", [x, t.astype(np.float32)])
    with pytest.raises(IndexError, match="target 3 is out of range for 3 classes"):
        ours("NegativeLogLikelihoodLoss", [x, np.array([0, 3])])
    with pytest.raises(IndexError, match="target -1 is out of range"):
        ours("SoftmaxCrossEntropyLoss", [x, np.array([-1, 0])], {"ignore_index": 5})
