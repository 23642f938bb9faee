"""The tree ensembles' forest: trees as flat arrays, walked for all samples at once.

TreeEnsemble (ml_tree_ensemble) and the older TreeEnsembleRegressor and TreeEnsembleClassifier
(ml_tree_attributes) each encode their trees their own way; both become a Forest, whose walk
and vote aggregation are here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.executor.ops.ml_common import numeric

__all__ = [
    "AGGREGATES",
    "LEAF",
    "MEMBER",
    "MODE_NAMES",
    "Forest",
    "features",
    "predict",
    "same_length",
    "work_dtype",
]

# Comparison modes, numbered as TreeEnsemble's nodes_modes; LEAF only in the older ops.
MODE_NAMES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
MEMBER, LEAF = 6, 7
AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble's numbering


@dataclass(frozen=True)
class Forest:
    """Trees as flat arrays. A branch target (``true_next``, ``false_next``, ``roots``) is a
    node position, or ``-(leaf + 1)`` for a leaf. Each leaf holds ``vote_count`` votes from
    ``vote_start`` on: (target or class, weight)."""

    feature: np.ndarray
    threshold: np.ndarray
    mode: np.ndarray
    true_next: np.ndarray
    false_next: np.ndarray
    track_true: np.ndarray
    roots: np.ndarray
    vote_start: np.ndarray
    vote_count: np.ndarray
    vote_target: np.ndarray
    vote_weight: np.ndarray
    members: np.ndarray  # (member nodes, longest set), NaN-padded
    member_row: np.ndarray  # node position -> row of ``members`` (-1 for other nodes)


def same_length(op: str, **lists: Any) -> int:
    """The common length of the nodes_* lists; ValueError naming them when they differ."""
    sizes = {name: int(np.size(v)) for name, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{op}: node attributes have different lengths: {sizes}")
    return next(iter(sizes.values()), 0)


# Per mode (row), whether an outcome of comparing a feature value with the threshold takes
# the true branch; the column is (a < b) + 2 (a == b) + 4 (a > b), 0 for NaN. BRANCH_MEMBER
# (the last row) is decided apart.
_TRUTH = np.zeros((MEMBER + 1, 8), dtype=bool)
for _mode, _codes in enumerate(((1, 2), (1,), (2, 4), (4,), (2,), (0, 1, 4))):
    _TRUTH[_mode, list(_codes)] = True


def _compare(forest: Forest, node: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Whether each (node, feature value) pair takes the true branch: one table lookup for
    all comparison modes at once."""
    modes = forest.mode[node]
    limit = forest.threshold[node]
    code = (value < limit).view(np.int8) | (value == limit).view(np.int8) << 1
    code |= (value > limit).view(np.int8) << 2
    out = _TRUTH[modes, code]
    if forest.members.size:
        sel = modes == MEMBER
        if sel.any():
            rows = forest.members[forest.member_row[node[sel]]]
            out[sel] = (rows == value[sel, None]).any(axis=1)
    out |= forest.track_true[node] & np.isnan(value)
    return out


def _leaves(forest: Forest, x: np.ndarray) -> np.ndarray:
    """(N, trees) leaf reached by each sample in each tree: all pairs step down together,
    one level per iteration, and leave the working set at their leaf."""
    n, trees = x.shape[0], forest.roots.size
    state = np.tile(forest.roots, n)
    sample = np.repeat(np.arange(n), trees)
    active = np.flatnonzero(state >= 0)
    for _ in range(forest.feature.size + 1):
        if active.size == 0:
            break
        node = state[active]
        value = x[sample[active], forest.feature[node]]
        go = _compare(forest, node, value)
        step = np.where(go, forest.true_next[node], forest.false_next[node])
        state[active] = step
        active = active[step >= 0]
    else:
        raise ValueError("tree ensemble: the node links form a cycle")
    return (-state - 1).reshape(n, trees)


def _aggregate(
    forest: Forest, leaves: np.ndarray, targets: int, how: str
) -> tuple[np.ndarray, np.ndarray]:
    """(N, targets) scores combined over the trees' votes (float64) and whether any vote
    reached each one. AVERAGE is left as the sum: callers divide where the op says.

    With one target every leaf counts, its votes summed (0 when it has none), as in
    onnxruntime's single-target path: MIN and MAX see those zeros."""
    n = leaves.shape[0]
    if targets == 1:
        owner = np.repeat(np.arange(forest.vote_count.size), forest.vote_count)
        per_leaf = np.bincount(owner, weights=forest.vote_weight, minlength=forest.vote_count.size)
        values = per_leaf[leaves]
        if leaves.shape[1] == 0:
            return np.zeros((n, 1)), np.zeros((n, 1), dtype=bool)
        reduce = {"MIN": np.min, "MAX": np.max}.get(how, np.sum)
        return reduce(values, axis=1, keepdims=True), np.ones((n, 1), dtype=bool)
    flat = leaves.reshape(-1)
    counts = forest.vote_count[flat]
    rows = np.repeat(np.repeat(np.arange(n), leaves.shape[1]), counts)
    starts = np.repeat(forest.vote_start[flat] - (np.cumsum(counts) - counts), counts)
    vote = np.arange(rows.size) + starts
    key = rows * targets + forest.vote_target[vote]
    weight = forest.vote_weight[vote]
    has = np.bincount(key, minlength=n * targets).reshape(n, targets) > 0
    if how in ("SUM", "AVERAGE"):
        scores = np.bincount(key, weights=weight, minlength=n * targets)
    else:
        scores = np.full(n * targets, np.inf if how == "MIN" else -np.inf)
        (np.minimum if how == "MIN" else np.maximum).at(scores, key, weight)
        scores[~has.reshape(-1)] = 0.0
    return scores.reshape(n, targets), has


# (sample, tree) pairs walked at once: bounds the walk's working arrays (~100 MB).
_PAIRS_PER_CHUNK = 1 << 22


def predict(forest: Forest, x: np.ndarray, targets: int, how: str) -> tuple[np.ndarray, np.ndarray]:
    """``_aggregate`` of the leaves each row reaches, a block of rows at a time."""
    step = max(1, _PAIRS_PER_CHUNK // max(1, forest.roots.size))
    if x.shape[0] <= step:
        return _aggregate(forest, _leaves(forest, x), targets, how)
    parts = [
        _aggregate(forest, _leaves(forest, x[i : i + step]), targets, how)
        for i in range(0, x.shape[0], step)
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def work_dtype(dtype: np.dtype) -> np.dtype:
    """Comparisons and thresholds in float64 for double input, else float32 (as onnxruntime
    holds thresholds in the input's float type)."""
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def features(x: np.ndarray, op: str, forest: Forest) -> np.ndarray:
    """X as (N, F) in the working dtype; refuses a feature id beyond F."""
    data = numeric(np.asarray(x), op)
    if data.ndim == 1:
        data = data.reshape(1, -1)
    if data.ndim != 2:
        raise ValueError(f"{op}: input shape {list(data.shape)} is not supported; expected [N, F]")
    used = forest.feature
    if used.size and (used.min() < 0 or used.max() >= data.shape[1]):
        raise ValueError(
            f"{op}: a node reads feature {used.max()}; the input has {data.shape[1]} features"
        )
    return data.astype(work_dtype(data.dtype), copy=False)
