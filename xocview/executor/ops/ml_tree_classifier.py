"""TreeEnsembleClassifier (ai.onnx.ml 1 and 3): a label and class scores from the leaves'
class votes summed over the trees.

A two-class classifier scores as onnxruntime does, but where its leaves vote for both classes
its label is the top class, as the spec says (onnxruntime answers 1 whenever class 1 scores
above 0, whatever the labels).
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.ml_forest import features, predict
from xocview.executor.ops.ml_post_transforms import TRANSFORMS, logistic, probit, transform
from xocview.executor.ops.ml_tree_attributes import Trees, check_enum, register_tree_op

__all__ = ["tree_ensemble_classifier_v1", "tree_ensemble_classifier_v3"]


def _classify_many(
    scores: np.ndarray, has: np.ndarray, base: np.ndarray, post: str
) -> tuple[np.ndarray, np.ndarray]:
    """More than two classes: base values added (they count as votes), the label is the
    best class that got a vote, and every score is transformed."""
    if base.size:
        scores, has = scores + base, np.ones_like(has)
    best = np.argmax(np.where(has, scores, -np.inf), axis=1)
    return best, transform(scores, post)


def _classify_two(
    scores: np.ndarray,
    has: np.ndarray,
    base: np.ndarray,
    post: str,
    one_class: bool,
    all_positive: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Two classes the way onnxruntime scores them: when the trees vote for one class only,
    its score decides against 0.5 (positive weights) or 0, and a lone score gets the other
    column derived (1 - s, or -s); with votes for both the higher score wins. A class no
    leaf voted for scores 0, as onnxruntime writes it."""
    s0, s1 = scores[:, 0], scores[:, 1]
    has0, has1 = has[:, 0], has[:, 1]
    second = -1  # how a lone score gets its other column: onnxruntime's add_second_class
    if base.size == 2:  # onnxruntime's formula, class 1's own votes aside
        s1 = np.where(has1, base[1] + s0, s1 + base[1])
        s0 = np.where(has1, -s1, s0 + base[0])
        two = np.ones(s0.shape, dtype=bool)
    else:
        s0 = s0 + base[0] if base.size == 1 else s0
        second = -1 if base.size == 1 else 3
        two = has1
    s0, s1 = np.where(has0, s0, 0.0), np.where(has1, s1, 0.0)
    positive = np.where(has1, s1, s0) > (0.5 if all_positive else 0.0)
    if one_class:
        kind = np.where(positive, 0, 1) if all_positive else np.where(positive, 2, 3)
    else:
        kind = np.full(s0.shape, second)
    out = np.zeros((s0.size, 2))
    pair = np.stack([s0, s1], axis=1)[two]
    out[two] = transform(pair, post) if pair.size else pair
    out[~two] = _lone_scores(s0[~two], kind[~two], post)
    if not one_class:  # the top class, as the spec says (onnxruntime: 1 whenever s1 > 0)
        positive = np.argmax(np.where(np.isnan(out), -np.inf, out), axis=1) == 1
    return positive.astype(np.int64), out


def _lone_scores(score: np.ndarray, kind: np.ndarray, post: str) -> np.ndarray:
    """Both columns from one score: (1 - s, s) when the weights are all positive, (-s, s)
    or their logistics when mixed, else (s, 0); PROBIT transforms the score alone."""
    out = np.zeros((score.size, 2))
    if post == "PROBIT":
        out[:, 0] = probit(score)
        return out
    complement = (kind == 0) | (kind == 1)
    mixed = kind >= 2
    out[:, 0] = np.where(complement, 1.0 - score, np.where(mixed, -score, score))
    out[:, 1] = np.where(complement | mixed, score, 0.0)
    if post == "LOGISTIC":
        out[mixed, 0] = logistic(-score[mixed])
        out[mixed, 1] = logistic(score[mixed])
    return out


def _classify(
    x: np.ndarray,
    trees: Trees,
    *,
    classlabels_int64s: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The label (N) and the class scores (N, classes; float32) from the leaves' class
    votes summed over the trees, plus base_values, post-transformed."""
    op = trees.op
    check_enum(op, "post_transform", trees.post_transform, TRANSFORMS)
    if bool(classlabels_int64s) == bool(classlabels_strings):
        raise ValueError(f"{op}: exactly one of classlabels_int64s and classlabels_strings is set")
    labels: np.ndarray = (
        np.asarray(classlabels_int64s, dtype=np.int64)
        if classlabels_int64s
        else np.array(classlabels_strings, dtype=object)
    )
    if labels.size < 2:
        raise ValueError(f"{op}: {labels.size} class label is not supported; expected 2 or more")
    forest = trees.forest(x.dtype, labels.size)
    scores, has = predict(forest, features(x, op, forest), labels.size, "SUM")
    base = trees.floats("base_values")
    post = trees.post_transform
    if labels.size > 2:
        if base.size not in (0, labels.size):
            raise ValueError(f"{op}: {base.size} base_values for {labels.size} classes")
        best, z = _classify_many(scores, has, base, post)
        return labels[best], z.astype(np.float32)
    if base.size > 2:
        raise ValueError(f"{op}: {base.size} base_values for 2 classes; expected 0, 1 or 2")
    one_class = np.unique(np.asarray(trees.vote_ids or [])).size == 1
    all_positive = bool((trees.vote_weights() >= 0).all())
    positive, z = _classify_two(scores, has, base, post, one_class, all_positive)
    return labels[positive], z.astype(np.float32)


tree_ensemble_classifier_v1, tree_ensemble_classifier_v3 = register_tree_op(
    "TreeEnsembleClassifier", "class", _classify
)
