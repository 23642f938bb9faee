"""SVMClassifier and SVMRegressor (ai.onnx.ml 1): libsvm's models as scikit-learn exports
them, with onnxruntime's reading of what the spec leaves open.

A classifier with ``vectors_per_class`` is libsvm's one-vs-one machine: one decision value
per pair of classes, a vote per pair, and the label with most votes (the first on a tie);
with ``prob_a``/``prob_b`` each pair's value is Platt-scaled and the pairs are coupled into
class probabilities (ml_svm_coupling). Without support vectors it is liblinear's: one row of
coefficients per class plus ``rho[0]``. SVMRegressor applies its post transform as
LinearRegressor does (onnxruntime ignores it).
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.ml_linear import class_labels, feature_rows, finish_scores, two_columns
from xocview.executor.ops.ml_post_transforms import TRANSFORMS, logistic, transform
from xocview.executor.ops.ml_svm_coupling import couple
from xocview.executor.ops.ml_tree_attributes import check_enum
from xocview.executor.registry import kernel

__all__ = ["svm_classifier", "svm_kernel", "svm_regressor"]

KERNELS = ("LINEAR", "POLY", "RBF", "SIGMOID")


def svm_kernel(
    rows: np.ndarray, vectors: np.ndarray, kind: str, params: list[float] | None
) -> np.ndarray:
    """The kernel of every row with every support vector, [N, V]: x.v, (gamma x.v +
    coef0)^degree, exp(-gamma |x - v|^2) or tanh(gamma x.v + coef0); ``params`` are
    (gamma, coef0, degree), zeros when not given."""
    gamma, coef0, degree = (float(np.float32(v)) for v in [*(params or []), 0.0, 0.0, 0.0][:3])
    dot = rows @ vectors.T
    if kind == "LINEAR":
        return dot
    if kind == "RBF":
        square = (rows * rows).sum(axis=1)[:, None] + (vectors * vectors).sum(axis=1) - 2 * dot
        return np.exp(-gamma * np.maximum(square, 0.0))
    inner = gamma * dot + coef0
    with np.errstate(invalid="ignore", over="ignore"):
        return np.tanh(inner) if kind == "SIGMOID" else np.power(inner, degree)


def _floats(values: list[float] | None) -> np.ndarray:
    """A float attribute as onnxruntime keeps it (float32), widened to compute."""
    return np.asarray(values if values is not None else [], dtype=np.float32).astype(np.float64)


def _vectors(op: str, support: list[float] | None, count: int, rows: np.ndarray) -> np.ndarray:
    """The support vectors as [count, features], which must be the input's features."""
    sv = _floats(support)
    features = rows.shape[1]
    if sv.size != count * features:
        raise ValueError(
            f"{op}: {sv.size} support_vectors values are not {count} vectors of the input's "
            f"{features} features"
        )
    return sv.reshape(count, features)


def _pairs(classes: int) -> tuple[np.ndarray, np.ndarray]:
    """The classes (i, j), i < j, of each one-vs-one machine in libsvm's order."""
    i, j = np.triu_indices(classes, k=1)
    return i, j


def _decisions(kern: np.ndarray, coef: np.ndarray, per_class: np.ndarray) -> np.ndarray:
    """Each pair's decision value before rho, [N, pairs]: class i's vectors weighted by
    coefficient row j - 1, class j's by row i (libsvm's layout of the dual coefficients)."""
    classes = per_class.size
    owner = np.repeat(np.arange(classes), per_class)  # the class of each support vector
    i, j = _pairs(classes)
    rows_i = np.where(owner[None, :] == i[:, None], coef[j - 1], 0.0)
    rows_j = np.where(owner[None, :] == j[:, None], coef[i], 0.0)
    return kern @ (rows_i + rows_j).T


def _one_vs_one(
    rows: np.ndarray,
    labels: np.ndarray,
    attrs: dict[str, list[float] | None],
    per_class: list[int],
    kernel_type: str,
    post: str,
) -> tuple[np.ndarray, np.ndarray]:
    op = "SVMClassifier"
    counts = np.asarray(per_class, dtype=np.int64)
    k = labels.size
    if counts.size != k or (counts < 0).any():
        raise ValueError(f"{op}: vectors_per_class has {counts.size} entries for {k} classes")
    total = int(counts.sum())
    vectors = _vectors(op, attrs["support_vectors"], total, rows)
    coef, rho = _floats(attrs["coefficients"]), _floats(attrs["rho"])
    pairs = k * (k - 1) // 2
    if coef.size < (k - 1) * total or rho.size < pairs:
        raise ValueError(
            f"{op}: {coef.size} coefficients and {rho.size} rho for {k} classes of {total} "
            f"support vectors; expected {(k - 1) * total} and {pairs}"
        )
    kern = svm_kernel(rows, vectors, kernel_type, attrs["kernel_params"])
    decision = _decisions(kern, coef[: (k - 1) * total].reshape(k - 1, total), counts)
    decision = (decision + rho[:pairs]).astype(np.float32).astype(np.float64)
    i, j = _pairs(k)
    winners = np.where(decision > 0, i, j)
    votes = (winners[:, :, None] == np.arange(k)).sum(axis=1)
    label = labels[np.argmax(votes, axis=1)]
    prob_a, prob_b = _floats(attrs["prob_a"]), _floats(attrs["prob_b"])
    if prob_a.size:
        if prob_a.size < pairs or prob_b.size < pairs:
            raise ValueError(f"{op}: prob_a and prob_b need {pairs} values for {k} classes")
        platt = 1.0 - logistic(decision * prob_a[:pairs] + prob_b[:pairs])
        return label, transform(couple(platt, k), post)
    if k == 2:  # (-s, s) plain, (1 - s, s) under a transform, as onnxruntime writes them
        return label, two_columns(decision[:, 0], post, negated=True)
    return label, transform(decision, post)


def _liblinear(
    rows: np.ndarray, labels: np.ndarray, attrs: dict[str, list[float] | None], post: str
) -> tuple[np.ndarray, np.ndarray]:
    """One score per class, X @ coefficients.T + rho[0]; the top class wins, but of two
    the second wins when its score is positive (0.5 with all weights positive)."""
    op = "SVMClassifier"
    coef, rho = _floats(attrs["coefficients"]), _floats(attrs["rho"])
    k, features = labels.size, rows.shape[1]
    if coef.size != k * features or rho.size < 1:
        raise ValueError(
            f"{op}: {coef.size} coefficients and {rho.size} rho for {k} classes of {features} "
            f"features; expected {k * features} and 1"
        )
    scores = (rows @ coef.reshape(k, features).T + rho[0]).astype(np.float32).astype(np.float64)
    best = np.argmax(scores, axis=1)
    if k == 2 and not _floats(attrs["prob_a"]).size:
        top = scores.max(axis=1)
        second = top >= 0.5 if (coef >= 0).all() else top > 0
        best = np.where(second, 1, best)
    return labels[best], finish_scores(scores, post)


@kernel("SVMClassifier", since=1)
def svm_classifier(
    x: np.ndarray,
    *,
    classlabels_ints: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    coefficients: list[float] | None = None,
    kernel_params: list[float] | None = None,
    kernel_type: str = "LINEAR",
    post_transform: str = "NONE",
    prob_a: list[float] | None = None,
    prob_b: list[float] | None = None,
    rho: list[float] | None = None,
    support_vectors: list[float] | None = None,
    vectors_per_class: list[int] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The label (N) and scores (float32): class probabilities with prob_a/prob_b, else the
    pairs' decision values (two columns for two classes), or liblinear's class scores."""
    op = "SVMClassifier"
    check_enum(op, "kernel_type", kernel_type, KERNELS)
    check_enum(op, "post_transform", post_transform, TRANSFORMS)
    if len(prob_a or []) != len(prob_b or []):
        raise ValueError(f"{op}: prob_a has {len(prob_a or [])} values, prob_b {len(prob_b or [])}")
    labels = class_labels(op, classlabels_ints, classlabels_strings)
    rows = feature_rows(x, op)
    attrs = {
        "coefficients": coefficients,
        "kernel_params": kernel_params,
        "prob_a": prob_a,
        "prob_b": prob_b,
        "rho": rho,
        "support_vectors": support_vectors,
    }
    if sum(vectors_per_class or []) > 0:
        label, scores = _one_vs_one(
            rows, labels, attrs, list(vectors_per_class or []), kernel_type, post_transform
        )
    else:
        label, scores = _liblinear(rows, labels, attrs, post_transform)
    return label, scores.astype(np.float32)


@kernel("SVMRegressor", since=1)
def svm_regressor(
    x: np.ndarray,
    *,
    coefficients: list[float] | None = None,
    kernel_params: list[float] | None = None,
    kernel_type: str = "LINEAR",
    n_supports: int = 0,
    one_class: int = 0,
    post_transform: str = "NONE",
    rho: list[float] | None = None,
    support_vectors: list[float] | None = None,
) -> np.ndarray:
    """[N, 1] float32: the coefficients over the kernel of the ``n_supports`` support
    vectors (over the features without them) plus rho[0]; ``one_class`` gives its sign as
    1 or -1 (0 counts as -1)."""
    op = "SVMRegressor"
    check_enum(op, "kernel_type", kernel_type, KERNELS)
    check_enum(op, "post_transform", post_transform, TRANSFORMS)
    rows = feature_rows(x, op)
    coef, offset = _floats(coefficients), _floats(rho)
    if offset.size < 1:
        raise ValueError(f"{op}: rho must have one value")
    if n_supports > 0:
        vectors = _vectors(op, support_vectors, n_supports, rows)
        if coef.size != n_supports:
            raise ValueError(f"{op}: {coef.size} coefficients for {n_supports} support vectors")
        values = svm_kernel(rows, vectors, kernel_type, kernel_params) @ coef
    else:
        if coef.size != rows.shape[1]:
            raise ValueError(f"{op}: {coef.size} coefficients for {rows.shape[1]} features")
        values = rows @ coef
    score = (values + offset[0]).astype(np.float32).astype(np.float64)[:, None]
    if one_class:
        return np.where(score > 0, 1.0, -1.0).astype(np.float32)
    return finish_scores(score, post_transform).astype(np.float32)
