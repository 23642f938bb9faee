"""LinearClassifier, LinearRegressor, SVMClassifier and SVMRegressor against onnxruntime on
random one-node models: every kernel type, two and more classes, with and without Platt
scaling, every post transform; plus where the kernels depart from onnxruntime on purpose, and
the refusals by name."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.executor.test_ml_ops import check, ours
from xocview.executor.ops.ml_post_transforms import probit

pytest.importorskip("onnxruntime", reason="onnxruntime is the per-op suite's reference")

RNG = np.random.default_rng(2929)
POSTS = ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"]
KERNELS = ["LINEAR", "POLY", "RBF", "SIGMOID"]


def _floats(*shape: int, scale: float = 1.0) -> list[float]:
    return (RNG.standard_normal(shape) * scale).astype(np.float32).reshape(-1).tolist()


def _x(rows: int = 6, features: int = 3, dtype: str = "float32") -> np.ndarray:
    return (RNG.standard_normal((rows, features)) * 2).astype(dtype)


# --------------------------------------------------------------------------- linear models


@pytest.mark.parametrize("post", POSTS)
@pytest.mark.parametrize("labels", ["ints", "strings"])
def test_linear_classifier_many_classes(post: str, labels: str) -> None:
    names = {
        "ints": {"classlabels_ints": [4, 7, 9]},
        "strings": {"classlabels_strings": list("abc")},
    }
    attrs = {"coefficients": _floats(3, 3), "intercepts": _floats(3), "post_transform": post}
    check("LinearClassifier", [_x()], {**attrs, **names[labels]}, opset=1, num_outputs=2)


@pytest.mark.parametrize("post", ["NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_linear_classifier_one_score_two_labels(post: str, dtype: str) -> None:
    """One row of coefficients against two labels: class 1 above 0, and two columns: the
    logistic's complement under LOGISTIC, (1 - s, s) under any other transform."""
    attrs = {
        "coefficients": _floats(3),
        "intercepts": [0.25],
        "classlabels_ints": [3, 8],
        "post_transform": post,
        "multi_class": 1,
    }
    check("LinearClassifier", [_x(dtype=dtype)], attrs, opset=1, num_outputs=2)


def test_linear_classifier_probit_on_one_score_is_the_probit_and_zero() -> None:
    """onnxruntime writes these rows out of order; the probit of each row's score is kept."""
    x = np.array([[0.1, 0.2], [0.3, 0.1]], dtype=np.float32)
    attrs = {"coefficients": [1.0, 1.0], "classlabels_ints": [0, 1], "post_transform": "PROBIT"}
    _, scores = ours("LinearClassifier", [x], attrs, opset=1)
    np.testing.assert_allclose(scores[:, 0], probit(np.array([0.3, 0.4])), rtol=1e-6)
    assert (scores[:, 1] == 0).all()


@pytest.mark.parametrize("post", POSTS)
@pytest.mark.parametrize("targets", [1, 3])
def test_linear_regressor(post: str, targets: int) -> None:
    """One target takes PROBIT alone, as onnxruntime does; several take every transform."""
    attrs = {
        "coefficients": _floats(targets, 4, scale=0.2),
        "intercepts": _floats(targets, scale=0.1),
        "targets": targets,
        "post_transform": post,
    }
    check("LinearRegressor", [_x(5, 4, "float32") * 0.5], attrs, opset=1)


def test_linear_regressor_ignores_intercepts_of_another_length() -> None:
    attrs = {"coefficients": _floats(2, 3), "intercepts": [5.0], "targets": 2}
    check("LinearRegressor", [_x()], attrs, opset=1)


def test_linear_regressor_takes_a_vector_and_doubles() -> None:
    x = _x(1, 3, "float64")
    (got,) = ours("LinearRegressor", [x[0]], {"coefficients": [1.0, 2.0, 3.0]}, opset=1)
    assert got.dtype == np.float32 and got.shape == (1, 1)
    np.testing.assert_allclose(got[0, 0], x[0] @ [1.0, 2.0, 3.0], rtol=1e-5)


# ------------------------------------------------------------------------------------ SVMs


def _svm_attrs(classes: int, kernel: str, proba: bool, post: str = "NONE") -> dict[str, Any]:
    """A libsvm machine of 2-4 support vectors per class over 3 features."""
    per_class = RNG.integers(2, 5, classes).tolist()
    total = sum(per_class)
    pairs = classes * (classes - 1) // 2
    attrs: dict[str, Any] = {
        "classlabels_ints": list(range(10, 10 + classes)),
        "vectors_per_class": per_class,
        "support_vectors": _floats(total, 3),
        "coefficients": _floats(classes - 1, total),
        "rho": _floats(pairs, scale=0.3),
        "kernel_type": kernel,
        "kernel_params": [0.4, 0.3, 3.0],
        "post_transform": post,
    }
    if proba:
        attrs["prob_a"] = (-np.abs(_floats(pairs)) - 0.5).tolist()
        attrs["prob_b"] = _floats(pairs, scale=0.2)
    return attrs


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("classes", [2, 3, 4])
@pytest.mark.parametrize("proba", [False, True])
def test_svm_classifier_one_vs_one(kernel: str, classes: int, proba: bool) -> None:
    """Votes over the pairs pick the label; the scores are the pairs' decision values (two
    columns (-s, s) for two classes) or, with prob_a/prob_b, coupled probabilities."""
    attrs = _svm_attrs(classes, kernel, proba)
    check("SVMClassifier", [_x(9)], attrs, opset=1, num_outputs=2)


@pytest.mark.parametrize("post", ["LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO"])
@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("proba", [False, True])
def test_svm_classifier_post_transforms(post: str, classes: int, proba: bool) -> None:
    attrs = _svm_attrs(classes, "RBF", proba, post)
    check("SVMClassifier", [_x(9)], attrs, opset=1, num_outputs=2)


def test_svm_classifier_probit_of_pairs_and_strings() -> None:
    attrs = _svm_attrs(3, "POLY", False, "PROBIT")
    attrs["classlabels_strings"] = ["x", "y", "z"]
    del attrs["classlabels_ints"]
    attrs["rho"] = [0.0, 0.0, 0.0]
    attrs["coefficients"] = (np.asarray(attrs["coefficients"]) * 1e-3).tolist()
    check("SVMClassifier", [_x(9) * 0.3], attrs, opset=1, num_outputs=2)


@pytest.mark.parametrize("classes", [2, 3])
@pytest.mark.parametrize("post", ["NONE", "LOGISTIC"])
@pytest.mark.parametrize("signs", ["mixed", "positive"])
def test_svm_classifier_liblinear(classes: int, post: str, signs: str) -> None:
    """No support vectors: one row of coefficients per class plus rho[0]; of two classes
    the second wins above 0 (above 0.5 when every weight is positive)."""
    coef = np.asarray(_floats(classes, 3))
    attrs = {
        "classlabels_ints": list(range(classes)),
        "coefficients": (np.abs(coef) if signs == "positive" else coef).tolist(),
        "rho": [0.1],
        "kernel_params": [0.1, 0.0, 3.0],
        "post_transform": post,
    }
    check("SVMClassifier", [_x(12) * 0.3], attrs, opset=1, num_outputs=2)


@pytest.mark.parametrize("kernel", KERNELS)
def test_svm_regressor(kernel: str) -> None:
    attrs = {
        "n_supports": 5,
        "support_vectors": _floats(5, 3),
        "coefficients": _floats(5),
        "rho": [0.3],
        "kernel_type": kernel,
        "kernel_params": [0.3, 0.5, 2.0],
    }
    check("SVMRegressor", [_x(7)], attrs, opset=1)
    check("SVMRegressor", [_x(7)], {**attrs, "one_class": 1}, opset=1)


def test_svm_regressor_without_support_vectors_is_linear() -> None:
    attrs = {"coefficients": _floats(3), "rho": [0.5], "kernel_params": [0.1, 0.0, 3.0]}
    check("SVMRegressor", [_x(7)], attrs, opset=1)


def test_svm_regressor_takes_probit_as_linear_regressor_does() -> None:
    """onnxruntime ignores SVMRegressor's post_transform; the spec applies it."""
    attrs = {"coefficients": [0.1, 0.1], "rho": [0.2], "post_transform": "PROBIT"}
    x = np.array([[0.5, 1.0], [1.0, 2.0]], dtype=np.float32)
    (got,) = ours("SVMRegressor", [x], attrs, opset=1)
    np.testing.assert_allclose(got[:, 0], probit(np.array([0.35, 0.5])), rtol=1e-5)


# ---------------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("op", "attrs", "message"),
    [
        ("LinearClassifier", {"coefficients": [1.0, 2.0]}, "do not fit inputs of 3 features"),
        (
            "LinearClassifier",
            {"coefficients": [1.0] * 5, "intercepts": [0, 0], "classlabels_ints": [1, 2]},
            "5 coefficients and 2 intercepts do not fit inputs of 3 features",
        ),
        (
            "LinearClassifier",
            {"coefficients": _floats(2, 3), "intercepts": [0, 0], "classlabels_ints": [1]},
            "1 class labels for 2 classes",
        ),
        (
            "LinearClassifier",
            {"coefficients": _floats(3), "classlabels_strings": ["only"]},
            "1 class labels for one row of coefficients; expected 2",
        ),
        ("LinearClassifier", {"coefficients": [1.0] * 3, "post_transform": "TANH"}, "TANH"),
        ("LinearRegressor", {"coefficients": [1.0] * 3, "targets": 0}, "targets is 0"),
        ("SVMClassifier", {"coefficients": [1.0] * 3}, "classlabels_ints and classlabels_strings"),
        (
            "SVMClassifier",
            {**_svm_attrs(2, "RBF", False), "kernel_type": "CUBIC"},
            "kernel_type 'CUBIC'",
        ),
        (
            "SVMClassifier",
            {**_svm_attrs(2, "RBF", True), "prob_b": [0.1, 0.2]},
            "prob_a has 1 values, prob_b 2",
        ),
        (
            "SVMClassifier",
            {**_svm_attrs(3, "RBF", False), "vectors_per_class": [1, 2]},
            "vectors_per_class has 2 entries for 3 classes",
        ),
        ("SVMRegressor", {"coefficients": [1.0] * 3}, "rho must have one value"),
        (
            "SVMRegressor",
            {"n_supports": 2, "support_vectors": [1.0] * 4, "coefficients": [1, 1], "rho": [0]},
            "are not 2 vectors of the input's 3 features",
        ),
    ],
)
def test_refusals_name_the_op_and_the_attribute(
    op: str, attrs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=op) as caught:
        ours(op, [_x()], attrs, opset=1)
    assert message in str(caught.value)


@pytest.mark.parametrize("op", ["LinearClassifier", "SVMRegressor"])
def test_inputs_of_rank_0_or_3_and_strings_are_refused(op: str) -> None:
    attrs: dict[str, Any] = {"coefficients": [1.0], "classlabels_ints": [0, 1]}
    if op == "SVMRegressor":
        attrs = {"coefficients": [1.0], "rho": [0.0]}
    for x in (np.float32(1.0), np.zeros((2, 2, 1), np.float32), np.array([["a"]])):
        with pytest.raises(ValueError, match=op):
            ours(op, [np.asarray(x)], attrs, opset=1)
