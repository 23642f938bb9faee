"""TreeEnsemble (ai.onnx.ml 5): trees whose nodes and leaves are addressed by position, leaves
voting one weight each for a target.

post_transform is numbered as the spec says (1 SOFTMAX, 2 LOGISTIC), where onnxruntime swaps
the two.
"""

from __future__ import annotations

import numpy as np

from xocview.executor.ops.ml_forest import (
    AGGREGATES,
    MEMBER,
    Forest,
    features,
    predict,
    same_length,
    work_dtype,
)
from xocview.executor.ops.ml_post_transforms import TRANSFORMS, finish_regression
from xocview.executor.registry import kernel

__all__ = ["tree_ensemble"]

_OP = "TreeEnsemble"


def _modes(nodes_modes: np.ndarray) -> np.ndarray:
    """nodes_modes as int64, refusing a mode outside 0 (BRANCH_LEQ) .. 6 (BRANCH_MEMBER)."""
    modes = np.asarray(nodes_modes).reshape(-1).astype(np.int64)
    if modes.size and (modes.min() < 0 or modes.max() > MEMBER):
        bad = modes[(modes < 0) | (modes > MEMBER)][0]
        raise ValueError(f"{_OP}: nodes_modes value {bad} is not supported; expected 0..6")
    return modes


def _branch(ids: list[int], to_leaf: list[int], size: int, leaves: int) -> np.ndarray:
    """One side's branch targets as a Forest encodes them: a node position, or -(leaf + 1)
    where ``to_leaf`` says the id is a leaf's; ValueError for a target out of range."""
    target = np.asarray(ids, dtype=np.int64)
    is_leaf = np.asarray(to_leaf, dtype=bool)
    limit = np.where(is_leaf, leaves, size)
    if ((target < 0) | (target >= limit)).any():
        raise ValueError(f"{_OP}: a branch points past the {size} nodes or {leaves} leaves")
    return np.where(is_leaf, -target - 1, target)


def _roots(
    tree_roots: list[int], true_next: np.ndarray, false_next: np.ndarray, size: int, leaves: int
) -> np.ndarray:
    """The trees' roots as a Forest encodes them. A one-leaf tree is a root whose branches
    are the same leaf; onnxruntime and the reference take the leaf at the root's own
    position."""
    roots = np.asarray(tree_roots, dtype=np.int64)
    if ((roots < 0) | (roots >= size)).any():
        raise ValueError(f"{_OP}: tree_roots {tree_roots} point past the {size} nodes")
    single = (true_next[roots] < 0) & (true_next[roots] == false_next[roots])
    if single.any() and roots[single].max() >= leaves:
        raise ValueError(f"{_OP}: a one-leaf tree's root is past the {leaves} leaves")
    return np.where(single, -roots - 1, roots)


def _member_table(
    modes: np.ndarray, membership_values: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The NaN-separated sets of membership_values, one per BRANCH_MEMBER node in order."""
    member_nodes = np.flatnonzero(modes == MEMBER)
    row = np.full(modes.size, -1, dtype=np.int64)
    if member_nodes.size == 0:
        return np.empty((0, 0)), row
    if membership_values is None:
        raise ValueError(f"{_OP}: BRANCH_MEMBER nodes need membership_values")
    values = np.asarray(membership_values, dtype=np.float64).reshape(-1)
    cuts = np.flatnonzero(np.isnan(values))
    sets = np.split(values, cuts)
    sets = [s[~np.isnan(s)] for s in sets]
    if len(sets) < member_nodes.size:
        raise ValueError(
            f"{_OP}: membership_values has {len(sets)} sets for {member_nodes.size} "
            "BRANCH_MEMBER nodes"
        )
    sets = sets[: member_nodes.size]
    width = max(1, *(s.size for s in sets))
    table = np.full((member_nodes.size, width), np.nan)
    for k, s in enumerate(sets):
        table[k, : s.size] = s
    row[member_nodes] = np.arange(member_nodes.size)
    return table, row


@kernel("TreeEnsemble", since=5)
def tree_ensemble(
    x: np.ndarray,
    *,
    nodes_featureids: list[int],
    nodes_splits: np.ndarray,
    nodes_modes: np.ndarray,
    nodes_truenodeids: list[int],
    nodes_falsenodeids: list[int],
    nodes_trueleafs: list[int],
    nodes_falseleafs: list[int],
    leaf_targetids: list[int],
    leaf_weights: np.ndarray,
    tree_roots: list[int],
    n_targets: int | None = None,
    aggregate_function: int = 1,
    post_transform: int = 0,
    nodes_missing_value_tracks_true: list[int] | None = None,
    membership_values: np.ndarray | None = None,
    nodes_hitrates: np.ndarray | None = None,
) -> np.ndarray:
    """[N, n_targets] scores of the trees' leaves combined per target (sum, average, min or
    max), then post-transformed, in X's dtype. BRANCH_MEMBER tests set membership.
    post_transform is numbered as the spec says: 1 SOFTMAX, 2 LOGISTIC."""
    del nodes_hitrates  # a hint for faster evaluation; results do not depend on it
    if x.dtype.kind != "f":
        raise ValueError(f"{_OP}: input dtype {x.dtype} is not supported; expected floats")
    if not 0 <= aggregate_function < len(AGGREGATES):
        raise ValueError(
            f"{_OP}: aggregate_function {aggregate_function} is not supported; expected 0..3"
        )
    if not 0 <= post_transform < len(TRANSFORMS):
        raise ValueError(f"{_OP}: post_transform {post_transform} is not supported; expected 0..4")
    targets = int(n_targets) if n_targets else int(np.max(leaf_targetids, initial=-1)) + 1
    size = same_length(
        _OP,
        nodes_featureids=nodes_featureids,
        nodes_splits=nodes_splits,
        nodes_modes=nodes_modes,
        nodes_truenodeids=nodes_truenodeids,
        nodes_falsenodeids=nodes_falsenodeids,
        nodes_trueleafs=nodes_trueleafs,
        nodes_falseleafs=nodes_falseleafs,
    )
    leaves = same_length(_OP, leaf_targetids=leaf_targetids, leaf_weights=leaf_weights)
    modes = _modes(nodes_modes)
    true_next = _branch(nodes_truenodeids, nodes_trueleafs, size, leaves)
    false_next = _branch(nodes_falsenodeids, nodes_falseleafs, size, leaves)
    roots = _roots(tree_roots, true_next, false_next, size, leaves)
    target = np.asarray(leaf_targetids, dtype=np.int64)
    if target.size and (target.min() < 0 or target.max() >= targets):
        raise ValueError(f"{_OP}: leaf_targetids must lie in [0, {targets})")
    members, member_row = _member_table(modes, membership_values)
    work = work_dtype(x.dtype)
    forest = Forest(
        feature=np.asarray(nodes_featureids, dtype=np.int64),
        threshold=np.asarray(nodes_splits).reshape(-1).astype(work),
        mode=modes,
        true_next=true_next,
        false_next=false_next,
        track_true=np.asarray(nodes_missing_value_tracks_true or [0] * size, dtype=bool),
        roots=roots,
        vote_start=np.arange(leaves),
        vote_count=np.ones(leaves, dtype=np.int64),
        vote_target=target,
        vote_weight=np.asarray(leaf_weights, dtype=np.float64).reshape(-1),
        members=members.astype(work),
        member_row=member_row,
    )
    how = AGGREGATES[aggregate_function]
    scores, has = predict(forest, features(x, _OP, forest), targets, how)
    out = finish_regression(scores, has, [], how, forest.roots.size, TRANSFORMS[post_transform])
    return out.astype(x.dtype)
