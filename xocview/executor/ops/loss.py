"""Loss kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss."""

from __future__ import annotations

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["negative_log_likelihood_loss", "softmax_cross_entropy_loss"]

_REDUCTIONS = ("none", "sum", "mean")


def _working(dtype: np.dtype) -> np.dtype:
    """The dtype the loss is computed in: float16 and bfloat16 widen to float32."""
    return np.promote_types(dtype, np.float32)


def _check(
    op: str, x: np.ndarray, target: np.ndarray, weight: np.ndarray | None, reduction: str
) -> None:
    """Raises ValueError for an unknown reduction or inputs whose shapes or types disagree."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction {reduction!r}; expected 'none', 'sum' or 'mean'")
    if x.ndim < 2:
        raise ValueError(f"{op}: input has shape {x.shape}; expected (N, C, d1, ..., dk)")
    if target.dtype.kind not in "iu":
        raise ValueError(f"{op}: target has dtype {target.dtype}; expected int32 or int64")
    want = (x.shape[0], *x.shape[2:])
    if target.shape != want:
        raise ValueError(f"{op}: target has shape {target.shape}; expected {want} for {x.shape}")
    if weight is not None and weight.shape != (x.shape[1],):
        raise ValueError(f"{op}: weight has shape {weight.shape}; expected ({x.shape[1]},)")


def _nll(
    op: str,
    logp: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None,
    reduction: str,
    ignore_index: int | None,
    dtype: np.dtype,
) -> np.ndarray:
    """-logp[n, target[n, ...], ...], weighted by weight[target], zero where the target is
    ignore_index, then reduced; the result in ``dtype``.

    The mean divides by the summed weights of the targets not ignored (their count without
    weights). Raises IndexError naming the first target outside [0, C) that is not ignored.
    """
    c = logp.shape[1]
    ignored = None if ignore_index is None else target == ignore_index
    classes = target if ignored is None else np.where(ignored, 0, target)
    bad = (classes < 0) | (classes >= c)
    if bad.any():
        raise IndexError(f"{op}: target {classes[bad].flat[0]} is out of range for {c} classes")
    loss = np.take_along_axis(logp, np.expand_dims(classes, 1), axis=1).squeeze(1)
    np.negative(loss, out=loss)
    w = None if weight is None else weight.astype(logp.dtype)[classes]
    if w is not None:
        loss *= w
    if ignored is not None:
        loss = np.where(ignored, 0, loss)  # not loss * 0: an ignored -inf would give NaN
        w = np.where(ignored, 0, 1 if w is None else w).astype(logp.dtype)
    if reduction == "none":
        return loss.astype(dtype, copy=False)
    total = loss.sum(dtype=logp.dtype)
    if reduction == "mean":
        count = loss.size if w is None else w.sum(dtype=logp.dtype)
        with np.errstate(divide="ignore", invalid="ignore"):
            total = total / count  # no samples, or all weights zero: NaN, as in PyTorch
    return np.asarray(total, dtype=dtype)


@kernel("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(
    x: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray | None = None,
    *,
    ignore_index: int | None = None,
    reduction: str = "mean",
) -> np.ndarray:
    """NegativeLogLikelihoodLoss-12, -13 and -22 (which add only types): x holds
    log-probabilities (N, C, d1, ..., dk), target class indices (N, d1, ..., dk).

    Raises ValueError for an unknown reduction or mismatched shapes, IndexError for a target
    outside [0, C) that is not ignore_index.
    """
    op = "NegativeLogLikelihoodLoss"
    _check(op, x, target, weight, reduction)
    logp = x.astype(_working(x.dtype), copy=False)
    return _nll(op, logp, target, weight, reduction, ignore_index, x.dtype)


def _log_softmax(x: np.ndarray) -> np.ndarray:
    """log(softmax(x)) over axis 1 as x - max - log(sum(exp(x - max))): no overflow."""
    m = np.max(x, axis=1, keepdims=True, initial=-np.inf)
    m[~np.isfinite(m)] = 0
    z = np.subtract(x, m)
    s = np.exp(z).sum(axis=1, keepdims=True, dtype=z.dtype)
    with np.errstate(divide="ignore"):
        z -= np.log(s)
    return z


@kernel("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    ignore_index: int | None = None,
    reduction: str = "mean",
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """SoftmaxCrossEntropyLoss-12 and -13 (which adds only bfloat16): the
    NegativeLogLikelihoodLoss of log(softmax(scores)) over the class axis 1, and with a
    second output those log-probabilities.

    Raises ValueError for an unknown reduction or mismatched shapes, IndexError for a label
    outside [0, C) that is not ignore_index.
    """
    op = "SoftmaxCrossEntropyLoss"
    _check(op, scores, labels, weights, reduction)
    logp = _log_softmax(scores.astype(_working(scores.dtype), copy=False))
    loss = _nll(op, logp, labels, weights, reduction, ignore_index, scores.dtype)
    if num_outputs == 1:
        return loss
    return loss, logp.astype(scores.dtype, copy=False)
