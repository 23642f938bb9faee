"""TreeEnsembleRegressor (ai.onnx.ml 1 and 3): per target, the leaves' votes combined over
the trees, plus base values, post-transformed."""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.ml_forest import AGGREGATES, features, predict
from xocview.executor.ops.ml_post_transforms import TRANSFORMS, finish_regression
from xocview.executor.ops.ml_tree_attributes import Trees, check_enum, register_tree_op

__all__ = ["tree_ensemble_regressor_v1", "tree_ensemble_regressor_v3"]


def _regress(
    x: np.ndarray, trees: Trees, *, n_targets: int | None = None, aggregate_function: str = "SUM"
) -> np.ndarray:
    """[N, n_targets] float32: the leaves' target votes combined over the trees, plus
    base_values, post-transformed."""
    op = trees.op
    check_enum(op, "aggregate_function", aggregate_function, AGGREGATES)
    check_enum(op, "post_transform", trees.post_transform, TRANSFORMS)
    targets = int(n_targets) if n_targets else int(np.max(trees.vote_ids or [0])) + 1
    forest = trees.forest(x.dtype, targets)
    scores, has = predict(forest, features(x, op, forest), targets, aggregate_function)
    base = trees.floats("base_values")
    out = finish_regression(
        scores, has, base, aggregate_function, forest.roots.size, trees.post_transform
    )
    return out.astype(np.float32)


tree_ensemble_regressor_v1, tree_ensemble_regressor_v3 = register_tree_op(
    "TreeEnsembleRegressor", "target", _regress
)
