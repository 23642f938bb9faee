"""LinearClassifier and LinearRegressor (ai.onnx.ml 1): X times the coefficients plus the
intercepts, then a post transform; and what the SVM kernels share with them (the feature
rows, the class labels, the scores' finish).

Where the spec leaves a result open they do what onnxruntime does: one score per row
against two labels becomes two columns, (1 - p, p) with p the score's logistic under
LOGISTIC, else (1 - s, s) whatever the transform; a regressor with one target takes PROBIT
alone. PROBIT on such a single score gives the probit and 0 (onnxruntime writes those rows
out of order).
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.ml_common import numeric
from xocview.executor.ops.ml_post_transforms import TRANSFORMS, logistic, probit, transform
from xocview.executor.ops.ml_tree_attributes import check_enum
from xocview.executor.registry import kernel

__all__ = [
    "class_labels",
    "feature_rows",
    "finish_scores",
    "linear_classifier",
    "linear_regressor",
    "two_columns",
]


def feature_rows(x: np.ndarray, op: str, features: int | None = None) -> np.ndarray:
    """x as float64 rows [N, F] (a vector is one row), as onnxruntime reads it: through
    float32 whatever its type. ``features``: the columns the op's weights expect."""
    data = numeric(np.asarray(x), op)
    if data.ndim not in (1, 2):
        raise ValueError(
            f"{op}: input shape {list(data.shape)} is not supported; expected [F] or [N, F]"
        )
    rows = data.reshape(1, -1) if data.ndim == 1 else data
    if features is not None and rows.shape[1] != features:
        raise ValueError(
            f"{op}: input has {rows.shape[1]} features per row; the weights expect {features}"
        )
    return rows.astype(np.float32).astype(np.float64)


def class_labels(
    op: str, ints: list[int] | None, strings: list[str] | None, *, required: bool = True
) -> np.ndarray:
    """The class labels: strings when ``classlabels_strings`` is set, else the integers."""
    if strings:
        return np.array(strings, dtype=object)
    if ints:
        return np.asarray(ints, dtype=np.int64)
    if required:
        raise ValueError(f"{op}: one of classlabels_ints and classlabels_strings must be set")
    return np.zeros(0, dtype=np.int64)


def finish_scores(scores: np.ndarray, post: str) -> np.ndarray:
    """The post transform over each row of several scores; one score takes PROBIT alone."""
    if scores.shape[1] >= 2:
        return transform(scores, post)
    return probit(scores) if post == "PROBIT" else scores


def two_columns(score: np.ndarray, post: str, *, negated: bool = False) -> np.ndarray:
    """One score s per row as two class columns: (1 - p, p) with p = logistic(s) under
    LOGISTIC, (probit(s), 0) under PROBIT, else (1 - s, s); (-s, s) untransformed when
    ``negated`` (an SVM's pair)."""
    if post == "LOGISTIC":
        score = logistic(score)
    elif post == "PROBIT":
        return np.stack([probit(score), np.zeros_like(score)], axis=1)
    first = -score if negated and post == "NONE" else 1.0 - score
    return np.stack([first, score], axis=1)


def _weights(
    op: str, coefficients: list[float] | None, biases: list[float] | None, features: int
) -> tuple[np.ndarray, np.ndarray]:
    """Coefficients as [targets, features] (float32 values, float64 to compute) and the
    biases, zeros when not given. With biases, coefficients beyond targets x features are
    left unread, as onnxruntime's GEMM leaves them (its own logreg_iris.onnx declares 2
    features for weights of 4)."""
    coef = np.asarray(coefficients if coefficients is not None else [], dtype=np.float32)
    bias = np.asarray(biases if biases else [], dtype=np.float32)
    targets = bias.size if bias.size else coef.size // max(features, 1)
    need = targets * features
    if coef.size == 0 or coef.size < need or (not bias.size and coef.size != need):
        given = f"{coef.size} coefficients" + (f" and {bias.size} intercepts" if bias.size else "")
        raise ValueError(f"{op}: {given} do not fit inputs of {features} features per row")
    if not bias.size:
        bias = np.zeros(targets, dtype=np.float32)
    return coef[:need].reshape(targets, features).astype(np.float64), bias.astype(np.float64)


@kernel("LinearClassifier", since=1)
def linear_classifier(
    x: np.ndarray,
    *,
    coefficients: list[float],
    classlabels_ints: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    intercepts: list[float] | None = None,
    multi_class: int = 0,
    post_transform: str = "NONE",
) -> tuple[np.ndarray, np.ndarray]:
    """The label (N) and class scores (N, classes; float32) of X @ coefficients.T +
    intercepts. One row of coefficients against two labels scores class 1 (label 1 above
    0); ``multi_class`` changes nothing, as in onnxruntime."""
    op = "LinearClassifier"
    check_enum(op, "post_transform", post_transform, TRANSFORMS)
    rows = feature_rows(x, op)
    labels = class_labels(op, classlabels_ints, classlabels_strings, required=False)
    coef, bias = _weights(op, coefficients, intercepts, rows.shape[1])
    scores = rows @ coef.T + bias
    if coef.shape[0] == 1:
        return _one_score(labels, scores[:, 0], post_transform)
    if labels.size != coef.shape[0]:
        raise ValueError(f"{op}: {labels.size} class labels for {coef.shape[0]} classes")
    best = np.argmax(scores, axis=1)
    return labels[best], finish_scores(scores, post_transform).astype(np.float32)


def _one_score(labels: np.ndarray, score: np.ndarray, post: str) -> tuple[np.ndarray, np.ndarray]:
    """One score per row against two labels: the second above 0, and two columns."""
    if labels.size != 2:
        raise ValueError(
            f"LinearClassifier: {labels.size} class labels for one row of coefficients; "
            "expected 2 (binary classification)"
        )
    label = labels[(score > 0).astype(np.int64)]
    return label, two_columns(score, post).astype(np.float32)


@kernel("LinearRegressor", since=1)
def linear_regressor(
    x: np.ndarray,
    *,
    coefficients: list[float] | None = None,
    intercepts: list[float] | None = None,
    post_transform: str = "NONE",
    targets: int = 1,
) -> np.ndarray:
    """X @ coefficients.T + intercepts, [N, targets] float32; intercepts of another length
    than ``targets`` are ignored, as onnxruntime does."""
    op = "LinearRegressor"
    check_enum(op, "post_transform", post_transform, TRANSFORMS)
    if targets < 1:
        raise ValueError(f"{op}: targets is {targets}; expected 1 or more")
    rows = feature_rows(x, op)
    bias = intercepts if intercepts and len(intercepts) == targets else [0.0] * targets
    weights, offsets = _weights(op, coefficients, bias, rows.shape[1])
    return finish_scores(rows @ weights.T + offsets, post_transform).astype(np.float32)
