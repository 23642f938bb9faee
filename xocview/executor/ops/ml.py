"""ai.onnx.ml kernels: the classic-ML ops scikit-learn exports (sklearn-onnx) are made of.

LabelEncoder, Binarizer, ArrayFeatureExtractor, Normalizer, Scaler, OneHotEncoder,
FeatureVectorizer, Imputer, and the tree ensembles: TreeEnsemble (ml opset 5) and the older
TreeEnsembleRegressor and TreeEnsembleClassifier. Versions are ai.onnx.ml's own. Where the
spec leaves a result open (two-class scores, post transforms of one target, targets no leaf
votes for), the kernels do what onnxruntime does, since that is what exported models are
checked against. Where onnxruntime departs from the spec they follow the spec: TreeEnsemble's
post_transform numbering (onnxruntime swaps SOFTMAX and LOGISTIC), the label of a two-class
classifier whose leaves vote for both classes (onnxruntime answers 1 whenever class 1 scores
above 0, whatever the labels), and NaN keys of LabelEncoder 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.executor.ops.strings import as_text
from xocview.executor.registry import kernel

__all__ = [
    "array_feature_extractor",
    "binarizer",
    "feature_vectorizer",
    "imputer",
    "label_encoder_v1",
    "label_encoder_v2",
    "label_encoder_v4",
    "normalizer",
    "one_hot_encoder",
    "scaler",
    "tree_ensemble",
    "tree_ensemble_classifier_v1",
    "tree_ensemble_classifier_v3",
    "tree_ensemble_regressor_v1",
    "tree_ensemble_regressor_v3",
]


def _is_text(x: np.ndarray) -> bool:
    return x.dtype.kind in "OUS"


def _numbers(x: np.ndarray, op: str) -> np.ndarray:
    """A numeric input; strings and bools are refused by dtype."""
    if x.dtype.kind not in "iuf":
        raise ValueError(f"{op}: input dtype {x.dtype} is not supported; expected numbers")
    return x


# ---------------------------------------------------------------------------- LabelEncoder


def _lookup(x: np.ndarray, keys: np.ndarray, values: np.ndarray, default: Any) -> np.ndarray:
    """``values[i]`` where ``x == keys[i]`` (the last i of a repeated key), ``default``
    elsewhere; a NaN key matches NaN inputs. Sorted keys and one searchsorted, no dict."""
    out = np.full(x.shape, default, dtype=values.dtype)
    if keys.size == 0 or x.size == 0:
        return out
    nan_keys = np.zeros(keys.shape, dtype=bool) if _is_text(keys) else np.isnan(keys)
    if keys.dtype.kind == "f" and nan_keys.any():
        out[np.isnan(x)] = values[np.flatnonzero(nan_keys)[-1]]
    keys, values = keys[~nan_keys], values[~nan_keys]
    distinct, last = np.unique(keys[::-1], return_index=True)
    if distinct.size == 0:
        return out
    chosen = values[::-1][last]
    pos = np.clip(np.searchsorted(distinct, x), 0, distinct.size - 1)
    hit = np.asarray(distinct[pos] == x, dtype=bool)
    out[hit] = chosen[pos[hit]]
    return out


def _one_of(op: str, kind: str, options: dict[str, Any]) -> tuple[str, np.ndarray] | None:
    """The one ``keys_*``/``values_*`` attribute set (an empty list counts as unset)."""
    given = {k: v for k, v in options.items() if v is not None and np.size(v) > 0}
    if len(given) > 1:
        raise ValueError(f"{op}: {' and '.join(sorted(given))} are all set; one {kind}_* may be")
    if not given:
        return None
    name, value = next(iter(given.items()))
    return name, np.asarray(value).reshape(-1)


def _check_key_kind(x: np.ndarray, keys: np.ndarray) -> None:
    if _is_text(x) != _is_text(keys):
        raise ValueError(
            f"LabelEncoder: input dtype {x.dtype} with keys of dtype {keys.dtype} is not "
            "supported; the input must have the keys' type"
        )


def _encode(
    x: np.ndarray,
    keys: dict[str, Any],
    values: dict[str, Any],
    defaults: dict[str, Any],
    default_tensor: np.ndarray | None = None,
) -> np.ndarray:
    """LabelEncoder 2 and 4: map by the one keys_* and values_* set."""
    key = _one_of("LabelEncoder", "keys", keys)
    value = _one_of("LabelEncoder", "values", values)
    if key is None or value is None:
        raise ValueError("LabelEncoder: one keys_* and one values_* attribute must be set")
    (key_name, key_arr), (value_name, value_arr) = key, value
    if key_arr.size != value_arr.size:
        raise ValueError(
            f"LabelEncoder: {key_name} has {key_arr.size} entries, {value_name} {value_arr.size}"
        )
    typed = {"keys_strings": object, "keys_int64s": np.int64, "keys_floats": np.float32}
    key_arr = key_arr.astype(typed.get(key_name, key_arr.dtype))
    value_arr = value_arr.astype(
        {"values_strings": object, "values_int64s": np.int64, "values_floats": np.float32}.get(
            value_name, value_arr.dtype
        )
    )
    data = as_text(x, "LabelEncoder") if _is_text(x) else x
    _check_key_kind(data, key_arr)
    if default_tensor is not None and np.size(default_tensor):
        default = np.asarray(default_tensor).reshape(-1)[0]
    elif value_arr.dtype.kind == "O":
        default = defaults["string"]
    elif value_arr.dtype.kind == "f":
        default = defaults["float"]
    else:
        default = defaults["int64"]
    return _lookup(data, key_arr, value_arr, default)


@kernel("LabelEncoder", since=1)
def label_encoder_v1(
    x: np.ndarray,
    *,
    classes_strings: list[str] | None = None,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Strings to their index in ``classes_strings`` (``default_int64`` when absent), or
    integers to the string at that index (``default_string`` out of range)."""
    classes = np.array(classes_strings or [], dtype=object)
    if _is_text(x):
        index = np.arange(classes.size, dtype=np.int64)
        return _lookup(as_text(x, "LabelEncoder"), classes, index, default_int64)
    if x.dtype.kind not in "iu":
        raise ValueError(
            f"LabelEncoder: input dtype {x.dtype} is not supported; expected string or int64"
        )
    out = np.full(x.shape, default_string, dtype=object)
    inside = (x >= 0) & (x < classes.size)
    out[inside] = classes[x[inside]]
    return out


@kernel("LabelEncoder", since=2)
def label_encoder_v2(
    x: np.ndarray,
    *,
    keys_floats: list[float] | None = None,
    keys_int64s: list[int] | None = None,
    keys_strings: list[str] | None = None,
    values_floats: list[float] | None = None,
    values_int64s: list[int] | None = None,
    values_strings: list[str] | None = None,
    default_float: float = -0.0,
    default_int64: int = -1,
    default_string: str = "_Unused",
) -> np.ndarray:
    """Each element mapped through the parallel keys_* and values_* lists; the default of
    the values' type where it is not a key."""
    return _encode(
        x,
        {"keys_floats": keys_floats, "keys_int64s": keys_int64s, "keys_strings": keys_strings},
        {
            "values_floats": values_floats,
            "values_int64s": values_int64s,
            "values_strings": values_strings,
        },
        {"float": default_float, "int64": default_int64, "string": default_string},
    )


@kernel("LabelEncoder", since=4)
def label_encoder_v4(
    x: np.ndarray,
    *,
    keys_floats: list[float] | None = None,
    keys_int64s: list[int] | None = None,
    keys_strings: list[str] | None = None,
    keys_tensor: np.ndarray | None = None,
    values_floats: list[float] | None = None,
    values_int64s: list[int] | None = None,
    values_strings: list[str] | None = None,
    values_tensor: np.ndarray | None = None,
    default_float: float = -0.0,
    default_int64: int = -1,
    default_string: str = "_Unused",
    default_tensor: np.ndarray | None = None,
) -> np.ndarray:
    """LabelEncoder 2 plus keys, values and default as tensors of any of its types (int16,
    int32, double...): the output takes the values' dtype."""
    return _encode(
        x,
        {
            "keys_floats": keys_floats,
            "keys_int64s": keys_int64s,
            "keys_strings": keys_strings,
            "keys_tensor": keys_tensor,
        },
        {
            "values_floats": values_floats,
            "values_int64s": values_int64s,
            "values_strings": values_strings,
            "values_tensor": values_tensor,
        },
        {"float": default_float, "int64": default_int64, "string": default_string},
        default_tensor,
    )


# ------------------------------------------------------------------- small feature kernels


@kernel("Binarizer", since=1)
def binarizer(x: np.ndarray, *, threshold: float = 0.0) -> np.ndarray:
    """1 where x > threshold, else 0, in x's dtype (NaN gives 0)."""
    _numbers(x, "Binarizer")
    limit = np.float32(threshold) if x.dtype != np.float64 else np.float64(threshold)
    return (x > limit).astype(x.dtype)


@kernel("ArrayFeatureExtractor", since=1)
def array_feature_extractor(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The elements of x's last axis at the indices Y (all of them, flattened); a vector x
    gives one row, as onnxruntime does."""
    if x.ndim == 0:
        raise ValueError("ArrayFeatureExtractor: input shape [] is not supported; expected rank 1+")
    if y.dtype.kind not in "iu":
        raise ValueError(
            f"ArrayFeatureExtractor: indices dtype {y.dtype} is not supported; expected int64"
        )
    index = y.reshape(-1).astype(np.int64)
    size = x.shape[-1]
    if index.size and (index.min() < 0 or index.max() >= size):
        bad = index[(index < 0) | (index >= size)][0]
        raise ValueError(f"ArrayFeatureExtractor: index {bad} is out of range for {size} columns")
    out = np.take(x, index, axis=-1)
    return out.reshape(1, -1) if x.ndim == 1 else out


def _rows(x: np.ndarray, op: str) -> np.ndarray:
    """[C] as [1, C]; [N, C] as is; other ranks refused."""
    if x.ndim == 1:
        return x.reshape(1, -1)
    if x.ndim != 2:
        raise ValueError(
            f"{op}: input shape {list(x.shape)} is not supported; expected [C] or [N, C]"
        )
    return x


@kernel("Normalizer", since=1)
def normalizer(x: np.ndarray, *, norm: str = "MAX") -> np.ndarray:
    """Each row divided by its max, sum of |x| (L1) or Euclidean norm (L2); a row whose
    divisor is 0 is copied. float32 out."""
    data = _rows(_numbers(x, "Normalizer"), "Normalizer").astype(np.float64)
    if norm == "MAX":
        div = data.max(axis=1, keepdims=True, initial=-np.inf)
    elif norm == "L1":
        div = np.abs(data).sum(axis=1, keepdims=True)
    elif norm == "L2":
        div = np.sqrt(np.square(data).sum(axis=1, keepdims=True))
    else:
        raise ValueError(f"Normalizer: norm {norm!r} is not supported; expected MAX, L1 or L2")
    safe = np.where(div == 0, 1.0, div)
    return (data / safe).astype(np.float32).reshape(x.shape)


@kernel("Scaler", since=1)
def scaler(
    x: np.ndarray, *, offset: list[float] | None = None, scale: list[float] | None = None
) -> np.ndarray:
    """(x - offset) * scale along the last axis (one value or one per column); float32 out."""
    data = _numbers(x, "Scaler").astype(np.float32)
    columns = data.shape[-1] if data.ndim else 1
    parts = []
    for name, values, neutral in (("offset", offset, 0.0), ("scale", scale, 1.0)):
        arr = np.asarray(values if values else [neutral], dtype=np.float32)
        if arr.size not in (1, columns):
            raise ValueError(f"Scaler: {name} has {arr.size} values for {columns} columns")
        parts.append(arr)
    return ((data - parts[0]) * parts[1]).astype(np.float32)


@kernel("OneHotEncoder", since=1)
def one_hot_encoder(
    x: np.ndarray,
    *,
    cats_int64s: list[int] | None = None,
    cats_strings: list[str] | None = None,
    zeros: int = 1,
) -> np.ndarray:
    """A new last axis with a 1 at the input's position in the categories (numbers are
    truncated to int64 first). With ``zeros`` 0 an input outside them is an error."""
    if _is_text(x):
        if not cats_strings:
            raise ValueError("OneHotEncoder: string input needs cats_strings")
        cats: np.ndarray = np.array(cats_strings, dtype=object)
        data = as_text(x, "OneHotEncoder")
    else:
        if not cats_int64s:
            raise ValueError("OneHotEncoder: numeric input needs cats_int64s")
        cats = np.asarray(cats_int64s, dtype=np.int64)
        data = _numbers(x, "OneHotEncoder").astype(np.int64)
    index = _lookup(data, cats, np.arange(cats.size, dtype=np.int64), -1)
    if not zeros and (index < 0).any():
        raise ValueError(
            f"OneHotEncoder: input value {data[index < 0].flat[0]!r} is not a category "
            "and zeros is 0"
        )
    out = np.zeros((*data.shape, cats.size), dtype=np.float32)
    hit = index >= 0
    out[hit, index[hit]] = 1.0
    return out


@kernel("FeatureVectorizer", since=1)
def feature_vectorizer(*xs: np.ndarray, inputdimensions: list[int] | None = None) -> np.ndarray:
    """The inputs side by side as float32 columns: input i gives ``inputdimensions[i]``
    columns, cut or zero-padded; a vector is one row."""
    dims = list(inputdimensions or [])
    if len(dims) != len(xs):
        raise ValueError(
            f"FeatureVectorizer: {len(xs)} inputs and {len(dims)} inputdimensions; expected one "
            "dimension per input"
        )
    if not xs:
        raise ValueError("FeatureVectorizer: no inputs")
    blocks = []
    rows = None
    for x, width in zip(xs, dims, strict=True):
        data = _numbers(np.asarray(x), "FeatureVectorizer")
        flat = data.reshape(1, -1) if data.ndim <= 1 else data.reshape(data.shape[0], -1)
        if rows is not None and flat.shape[0] != rows:
            raise ValueError(f"FeatureVectorizer: inputs have {rows} and {flat.shape[0]} rows")
        rows = flat.shape[0]
        block = np.zeros((rows, width), dtype=np.float32)
        keep = min(width, flat.shape[1])
        block[:, :keep] = flat[:, :keep]
        blocks.append(block)
    return np.concatenate(blocks, axis=1)


@kernel("Imputer", since=1)
def imputer(
    x: np.ndarray,
    *,
    imputed_value_floats: list[float] | None = None,
    imputed_value_int64s: list[int] | None = None,
    replaced_value_float: float = 0.0,
    replaced_value_int64: int = 0,
) -> np.ndarray:
    """Elements equal to the replaced value (NaN matches NaN) become the imputed value of
    their column (one value, or one per column of the last axis)."""
    data = _numbers(x, "Imputer")
    values: list[float] | list[int] | None = imputed_value_floats
    replaced: float = float(replaced_value_float)
    if data.dtype.kind != "f":
        values, replaced = imputed_value_int64s, replaced_value_int64
    if not values:
        kind = "imputed_value_floats" if data.dtype.kind == "f" else "imputed_value_int64s"
        raise ValueError(f"Imputer: {kind} must be set for input dtype {data.dtype}")
    fill = np.asarray(values).astype(data.dtype)
    columns = data.shape[-1] if data.ndim else 1
    if fill.size not in (1, columns):
        raise ValueError(f"Imputer: {fill.size} imputed values for {columns} columns")
    hit = np.isnan(data) if data.dtype.kind == "f" and np.isnan(replaced) else data == replaced
    return np.where(hit, np.broadcast_to(fill, data.shape), data)


# --------------------------------------------------------------------------- tree ensembles

# Comparison modes, numbered as TreeEnsemble's nodes_modes; LEAF only in the older ops.
_MODE_NAMES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ")
_MEMBER, _LEAF = 6, 7
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")  # TreeEnsemble's numbering
_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")


@dataclass(frozen=True)
class _Forest:
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


def _same_length(op: str, **lists: Any) -> int:
    """The common length of the nodes_* lists; ValueError naming them when they differ."""
    sizes = {name: int(np.size(v)) for name, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"{op}: node attributes have different lengths: {sizes}")
    return next(iter(sizes.values()), 0)


# Per mode (row), whether an outcome of comparing a feature value with the threshold takes
# the true branch; the column is (a < b) + 2 (a == b) + 4 (a > b), 0 for NaN. BRANCH_MEMBER
# (the last row) is decided apart.
_TRUTH = np.zeros((_MEMBER + 1, 8), dtype=bool)
for _mode, _codes in enumerate(((1, 2), (1,), (2, 4), (4,), (2,), (0, 1, 4))):
    _TRUTH[_mode, list(_codes)] = True


def _compare(forest: _Forest, node: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Whether each (node, feature value) pair takes the true branch: one table lookup for
    all comparison modes at once."""
    modes = forest.mode[node]
    limit = forest.threshold[node]
    code = (value < limit).view(np.int8) | (value == limit).view(np.int8) << 1
    code |= (value > limit).view(np.int8) << 2
    out = _TRUTH[modes, code]
    if forest.members.size:
        sel = modes == _MEMBER
        if sel.any():
            rows = forest.members[forest.member_row[node[sel]]]
            out[sel] = (rows == value[sel, None]).any(axis=1)
    out |= forest.track_true[node] & np.isnan(value)
    return out


def _leaves(forest: _Forest, x: np.ndarray) -> np.ndarray:
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
    forest: _Forest, leaves: np.ndarray, targets: int, how: str
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


def _predict(
    forest: _Forest, x: np.ndarray, targets: int, how: str
) -> tuple[np.ndarray, np.ndarray]:
    """``_aggregate`` of the leaves each row reaches, a block of rows at a time."""
    step = max(1, _PAIRS_PER_CHUNK // max(1, forest.roots.size))
    if x.shape[0] <= step:
        return _aggregate(forest, _leaves(forest, x), targets, how)
    parts = [
        _aggregate(forest, _leaves(forest, x[i : i + step]), targets, how)
        for i in range(0, x.shape[0], step)
    ]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _member_table(
    modes: np.ndarray, membership_values: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """The NaN-separated sets of membership_values, one per BRANCH_MEMBER node in order."""
    member_nodes = np.flatnonzero(modes == _MEMBER)
    row = np.full(modes.size, -1, dtype=np.int64)
    if member_nodes.size == 0:
        return np.empty((0, 0)), row
    if membership_values is None:
        raise ValueError("TreeEnsemble: BRANCH_MEMBER nodes need membership_values")
    values = np.asarray(membership_values, dtype=np.float64).reshape(-1)
    cuts = np.flatnonzero(np.isnan(values))
    sets = np.split(values, cuts)
    sets = [s[~np.isnan(s)] for s in sets]
    if len(sets) < member_nodes.size:
        raise ValueError(
            f"TreeEnsemble: membership_values has {len(sets)} sets for {member_nodes.size} "
            "BRANCH_MEMBER nodes"
        )
    sets = sets[: member_nodes.size]
    width = max(1, *(s.size for s in sets))
    table = np.full((member_nodes.size, width), np.nan)
    for k, s in enumerate(sets):
        table[k, : s.size] = s
    row[member_nodes] = np.arange(member_nodes.size)
    return table, row


def _csr_votes(
    leaf: np.ndarray, target: np.ndarray, weight: np.ndarray, leaves: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Votes grouped by leaf: (start, count) per leaf and the votes' targets and weights."""
    order = np.argsort(leaf, kind="stable")
    count = np.bincount(leaf, minlength=leaves)
    start = np.cumsum(count) - count
    return start, count, target[order], weight[order]


def _work_dtype(dtype: np.dtype) -> np.dtype:
    """Comparisons and thresholds in float64 for double input, else float32 (as onnxruntime
    holds thresholds in the input's float type)."""
    return np.dtype(np.float64 if dtype == np.float64 else np.float32)


def _features(x: np.ndarray, op: str, forest: _Forest) -> np.ndarray:
    """X as (N, F) in the working dtype; refuses a feature id beyond F."""
    data = _numbers(np.asarray(x), op)
    if data.ndim == 1:
        data = data.reshape(1, -1)
    if data.ndim != 2:
        raise ValueError(f"{op}: input shape {list(data.shape)} is not supported; expected [N, F]")
    used = forest.feature
    if used.size and (used.min() < 0 or used.max() >= data.shape[1]):
        raise ValueError(
            f"{op}: a node reads feature {used.max()}; the input has {data.shape[1]} features"
        )
    return data.astype(_work_dtype(data.dtype), copy=False)


# ---- TreeEnsemble (ml opset 5)


def _v5_forest(
    x_dtype: np.dtype,
    nodes_featureids: list[int],
    nodes_splits: np.ndarray,
    nodes_modes: np.ndarray,
    nodes_truenodeids: list[int],
    nodes_falsenodeids: list[int],
    nodes_trueleafs: list[int],
    nodes_falseleafs: list[int],
    nodes_missing_value_tracks_true: list[int] | None,
    membership_values: np.ndarray | None,
    leaf_targetids: list[int],
    leaf_weights: np.ndarray,
    tree_roots: list[int],
    n_targets: int,
) -> _Forest:
    """TreeEnsemble's attributes as a forest; ValueError for links out of range."""
    op = "TreeEnsemble"
    size = _same_length(
        op,
        nodes_featureids=nodes_featureids,
        nodes_splits=nodes_splits,
        nodes_modes=nodes_modes,
        nodes_truenodeids=nodes_truenodeids,
        nodes_falsenodeids=nodes_falsenodeids,
        nodes_trueleafs=nodes_trueleafs,
        nodes_falseleafs=nodes_falseleafs,
    )
    leaves = _same_length(op, leaf_targetids=leaf_targetids, leaf_weights=leaf_weights)
    modes = np.asarray(nodes_modes).reshape(-1).astype(np.int64)
    if modes.size and (modes.min() < 0 or modes.max() > _MEMBER):
        bad = modes[(modes < 0) | (modes > _MEMBER)][0]
        raise ValueError(f"{op}: nodes_modes value {bad} is not supported; expected 0..6")
    true_ids, false_ids = (
        np.asarray(v, dtype=np.int64) for v in (nodes_truenodeids, nodes_falsenodeids)
    )
    true_leaf, false_leaf = (np.asarray(v, dtype=bool) for v in (nodes_trueleafs, nodes_falseleafs))
    for ids, is_leaf in ((true_ids, true_leaf), (false_ids, false_leaf)):
        limit = np.where(is_leaf, leaves, size)
        if ((ids < 0) | (ids >= limit)).any():
            raise ValueError(f"{op}: a branch points past the {size} nodes or {leaves} leaves")
    roots = np.asarray(tree_roots, dtype=np.int64)
    if ((roots < 0) | (roots >= size)).any():
        raise ValueError(f"{op}: tree_roots {tree_roots} point past the {size} nodes")
    # A one-leaf tree: a root whose branches are the same leaf; onnxruntime and the reference
    # take the leaf at the root's own position.
    single = true_leaf[roots] & false_leaf[roots] & (true_ids[roots] == false_ids[roots])
    if single.any() and roots[single].max() >= leaves:
        raise ValueError(f"{op}: a one-leaf tree's root is past the {leaves} leaves")
    target = np.asarray(leaf_targetids, dtype=np.int64)
    if target.size and (target.min() < 0 or target.max() >= n_targets):
        raise ValueError(f"{op}: leaf_targetids must lie in [0, {n_targets})")
    members, member_row = _member_table(modes, membership_values)
    work = _work_dtype(x_dtype)
    tracks = nodes_missing_value_tracks_true or [0] * size
    return _Forest(
        feature=np.asarray(nodes_featureids, dtype=np.int64),
        threshold=np.asarray(nodes_splits).reshape(-1).astype(work),
        mode=modes,
        true_next=np.where(true_leaf, -true_ids - 1, true_ids),
        false_next=np.where(false_leaf, -false_ids - 1, false_ids),
        track_true=np.asarray(tracks, dtype=bool),
        roots=np.where(single, -roots - 1, roots),
        vote_start=np.arange(leaves),
        vote_count=np.ones(leaves, dtype=np.int64),
        vote_target=target,
        vote_weight=np.asarray(leaf_weights, dtype=np.float64).reshape(-1),
        members=members.astype(work),
        member_row=member_row,
    )


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
        raise ValueError(f"TreeEnsemble: input dtype {x.dtype} is not supported; expected floats")
    if not 0 <= aggregate_function < len(_AGGREGATES):
        raise ValueError(
            f"TreeEnsemble: aggregate_function {aggregate_function} is not supported; expected 0..3"
        )
    if not 0 <= post_transform < len(_TRANSFORMS):
        raise ValueError(
            f"TreeEnsemble: post_transform {post_transform} is not supported; expected 0..4"
        )
    targets = int(n_targets) if n_targets else int(np.max(leaf_targetids, initial=-1)) + 1
    forest = _v5_forest(
        x.dtype,
        nodes_featureids,
        nodes_splits,
        nodes_modes,
        nodes_truenodeids,
        nodes_falsenodeids,
        nodes_trueleafs,
        nodes_falseleafs,
        nodes_missing_value_tracks_true,
        membership_values,
        leaf_targetids,
        leaf_weights,
        tree_roots,
        targets,
    )
    data = _features(x, "TreeEnsemble", forest)
    how = _AGGREGATES[aggregate_function]
    scores, has = _predict(forest, data, targets, how)
    out = _finish_regression(scores, has, [], how, forest.roots.size, _TRANSFORMS[post_transform])
    return out.astype(x.dtype)


# ---- post transforms (onnxruntime's formulas, row-wise)


def _logistic(v: np.ndarray) -> np.ndarray:
    e = 1.0 / (1.0 + np.exp(-np.abs(v)))
    return np.where(v < 0, 1.0 - e, e)


def _probit(v: np.ndarray) -> np.ndarray:
    """sqrt(2) * erfinv(2v - 1) with the closed-form approximation onnxruntime uses, in
    float32 as it computes it (near v = 0.5 the float64 result differs by 1e-4)."""
    f = np.float32
    x = f(2) * v.astype(f) - f(1)
    sign = np.where(x < 0, f(-1), f(1))
    with np.errstate(divide="ignore", invalid="ignore"):
        log = np.log((f(1) - x) * (f(1) + x))
        a = f(2) / (f(3.14159) * f(0.147)) + f(0.5) * log
        inner = -a + np.sqrt(a * a - f(1) / f(0.147) * log)
        return (f(1.41421356) * sign * np.sqrt(inner)).astype(np.float64)


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _softmax_zero(v: np.ndarray) -> np.ndarray:
    """Softmax that leaves (near-)zero scores at zero; a row of zeros stays zero."""
    big = np.abs(v) > 1e-7
    top = v.max(axis=1, keepdims=True)
    e = np.where(big, np.exp(v - top), v * np.exp(-top))
    total = np.where(big, e, 0.0).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total == 0, 0.0, e / np.where(total == 0, 1.0, total))


def _transform(v: np.ndarray, post: str) -> np.ndarray:
    if post == "LOGISTIC":
        return _logistic(v)
    if post == "SOFTMAX":
        return _softmax(v)
    if post == "SOFTMAX_ZERO":
        return _softmax_zero(v)
    if post == "PROBIT":
        return _probit(v)
    return v


def _finish_regression(
    scores: np.ndarray, has: np.ndarray, base: Any, how: str, trees: int, post: str
) -> np.ndarray:
    """Average, base values and post transform as onnxruntime applies them: one target adds
    a single base value and only PROBIT changes it; several add base values of their length
    (to the targets some leaf voted for) and take any transform."""
    targets = scores.shape[1]
    base_arr = np.asarray(base if base is not None else [], dtype=np.float64).reshape(-1)
    if how == "AVERAGE":
        scores = scores / max(trees, 1)
    if targets == 1:
        if base_arr.size == 1:
            scores = scores + base_arr[0]
        return _probit(scores) if post == "PROBIT" else scores
    if base_arr.size == targets:
        scores = scores + base_arr
    # A target no leaf voted for stays 0, base value or not: onnxruntime writes it as unset.
    return _transform(np.where(has, scores, 0.0), post)


# ---- TreeEnsembleRegressor and TreeEnsembleClassifier (ml opsets 1 and 3)


def _v3_forest(
    op: str,
    x_dtype: np.dtype,
    nodes: dict[str, Any],
    votes: tuple[Any, Any, Any, Any],
    targets: int,
) -> _Forest:
    """The older ops' (tree id, node id) addressed nodes and votes as a forest.

    ``votes`` is (tree ids, node ids, target ids, weights). Each tree's root is its first
    node in the lists, as the reference takes it. ValueError for unknown links and modes.
    """
    optional = ("nodes_values", "nodes_missing_value_tracks_true")
    size = _same_length(op, **{k: v for k, v in nodes.items() if k not in optional or np.size(v)})
    tree = np.asarray(nodes["nodes_treeids"], dtype=np.int64)
    node_id = np.asarray(nodes["nodes_nodeids"], dtype=np.int64)
    if size == 0 or tree.min() < 0 or node_id.min() < 0:
        raise ValueError(f"{op}: expected nodes with tree and node ids >= 0")
    span = int(node_id.max()) + 1
    key = tree * span + node_id
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    if np.any(sorted_key[1:] == sorted_key[:-1]):
        raise ValueError(f"{op}: a (tree id, node id) pair appears twice")

    def find(t: np.ndarray, n: np.ndarray, what: str) -> np.ndarray:
        k = t * span + n
        pos = np.clip(np.searchsorted(sorted_key, k), 0, size - 1)
        ok = (sorted_key[pos] == k) & (n >= 0) & (n < span)
        if not ok.all():
            raise ValueError(f"{op}: {what} names a node that does not exist")
        return order[pos]

    names, codes = np.unique(np.asarray(nodes["nodes_modes"], dtype=object), return_inverse=True)
    known = {name: k for k, name in enumerate(_MODE_NAMES)} | {"LEAF": _LEAF}
    for name in names:
        if name not in known:
            raise ValueError(f"{op}: nodes_modes {name!r} is not supported; expected {known}")
    mode = np.array([known[n] for n in names], dtype=np.int64)[codes.reshape(-1)]
    leaf = mode == _LEAF
    branch = ~leaf
    true_next = np.zeros(size, dtype=np.int64)
    false_next = np.zeros(size, dtype=np.int64)
    for out, name in ((true_next, "nodes_truenodeids"), (false_next, "nodes_falsenodeids")):
        child = find(tree[branch], np.asarray(nodes[name], dtype=np.int64)[branch], name)
        out[branch] = np.where(leaf[child], -child - 1, child)
    _, first = np.unique(tree, return_index=True)
    roots = np.where(leaf[first], -first - 1, first)
    v_tree, v_node, v_target, v_weight = (np.asarray(v).reshape(-1) for v in votes)
    if not v_tree.size == v_node.size == v_target.size == v_weight.size:
        raise ValueError(f"{op}: the vote attributes have different lengths")
    if v_target.size and (v_target.min() < 0 or v_target.max() >= targets):
        raise ValueError(f"{op}: a vote's target or class id is outside [0, {targets})")
    vote_leaf = find(v_tree.astype(np.int64), v_node.astype(np.int64), "a vote")
    start, count, vote_target, vote_weight = _csr_votes(
        vote_leaf, v_target.astype(np.int64), v_weight.astype(np.float64), size
    )
    tracks = nodes["nodes_missing_value_tracks_true"]
    values = np.asarray(nodes["nodes_values"], dtype=np.float64).reshape(-1)
    if values.size != size:
        raise ValueError(f"{op}: nodes_values has {values.size} entries for {size} nodes")
    return _Forest(
        feature=np.where(leaf, 0, np.asarray(nodes["nodes_featureids"], dtype=np.int64)),
        threshold=values.astype(_work_dtype(x_dtype)),
        mode=np.where(leaf, 0, mode),
        true_next=true_next,
        false_next=false_next,
        track_true=np.asarray(tracks if tracks else [0] * size, dtype=bool),
        roots=roots,
        vote_start=start,
        vote_count=count,
        vote_target=vote_target,
        vote_weight=vote_weight,
        members=np.empty((0, 0)),
        member_row=np.full(size, -1, dtype=np.int64),
    )


def _pick(op: str, floats: Any, tensor: np.ndarray | None, name: str) -> Any:
    """``name`` or ``name_as_tensor`` (double values), whichever is set."""
    if floats and tensor is not None and np.size(tensor):
        raise ValueError(f"{op}: {name} and {name}_as_tensor are both set")
    if tensor is not None and np.size(tensor):
        return np.asarray(tensor, dtype=np.float64).reshape(-1)
    return np.asarray(floats or [], dtype=np.float32).astype(np.float64)


def _check_enum(op: str, name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{op}: {name} {value!r} is not supported; expected one of {allowed}")


def _node_attributes(
    op: str,
    nodes_featureids: Any,
    nodes_modes: Any,
    nodes_nodeids: Any,
    nodes_treeids: Any,
    nodes_truenodeids: Any,
    nodes_falsenodeids: Any,
    nodes_missing_value_tracks_true: Any,
    values: np.ndarray,
) -> dict[str, Any]:
    return {
        "nodes_featureids": nodes_featureids or [],
        "nodes_modes": nodes_modes or [],
        "nodes_nodeids": nodes_nodeids or [],
        "nodes_treeids": nodes_treeids or [],
        "nodes_truenodeids": nodes_truenodeids or [],
        "nodes_falsenodeids": nodes_falsenodeids or [],
        "nodes_missing_value_tracks_true": nodes_missing_value_tracks_true or [],
        "nodes_values": values,
    }


@kernel("TreeEnsembleRegressor", since=3)
def tree_ensemble_regressor_v3(
    x: np.ndarray,
    *,
    n_targets: int | None = None,
    aggregate_function: str = "SUM",
    post_transform: str = "NONE",
    base_values: list[float] | None = None,
    base_values_as_tensor: np.ndarray | None = None,
    nodes_featureids: list[int] | None = None,
    nodes_modes: list[str] | None = None,
    nodes_nodeids: list[int] | None = None,
    nodes_treeids: list[int] | None = None,
    nodes_truenodeids: list[int] | None = None,
    nodes_falsenodeids: list[int] | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    nodes_values: list[float] | None = None,
    nodes_values_as_tensor: np.ndarray | None = None,
    nodes_hitrates: list[float] | None = None,
    nodes_hitrates_as_tensor: np.ndarray | None = None,
    target_ids: list[int] | None = None,
    target_nodeids: list[int] | None = None,
    target_treeids: list[int] | None = None,
    target_weights: list[float] | None = None,
    target_weights_as_tensor: np.ndarray | None = None,
) -> np.ndarray:
    """[N, n_targets] float32: the leaves' target votes combined over the trees, plus
    base_values, post-transformed."""
    del nodes_hitrates, nodes_hitrates_as_tensor  # hints only
    op = "TreeEnsembleRegressor"
    _check_enum(op, "aggregate_function", aggregate_function, _AGGREGATES)
    _check_enum(op, "post_transform", post_transform, _TRANSFORMS)
    targets = int(n_targets) if n_targets else int(np.max(target_ids or [0])) + 1
    nodes = _node_attributes(
        op,
        nodes_featureids,
        nodes_modes,
        nodes_nodeids,
        nodes_treeids,
        nodes_truenodeids,
        nodes_falsenodeids,
        nodes_missing_value_tracks_true,
        _pick(op, nodes_values, nodes_values_as_tensor, "nodes_values"),
    )
    weights = _pick(op, target_weights, target_weights_as_tensor, "target_weights")
    votes = (target_treeids or [], target_nodeids or [], target_ids or [], weights)
    forest = _v3_forest(op, x.dtype, nodes, votes, targets)
    data = _features(x, op, forest)
    scores, has = _predict(forest, data, targets, aggregate_function)
    base = _pick(op, base_values, base_values_as_tensor, "base_values")
    out = _finish_regression(
        scores, has, base, aggregate_function, forest.roots.size, post_transform
    )
    return out.astype(np.float32)


@kernel("TreeEnsembleRegressor", since=1)
def tree_ensemble_regressor_v1(
    x: np.ndarray,
    *,
    n_targets: int | None = None,
    aggregate_function: str = "SUM",
    post_transform: str = "NONE",
    base_values: list[float] | None = None,
    nodes_featureids: list[int] | None = None,
    nodes_modes: list[str] | None = None,
    nodes_nodeids: list[int] | None = None,
    nodes_treeids: list[int] | None = None,
    nodes_truenodeids: list[int] | None = None,
    nodes_falsenodeids: list[int] | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    nodes_values: list[float] | None = None,
    nodes_hitrates: list[float] | None = None,
    target_ids: list[int] | None = None,
    target_nodeids: list[int] | None = None,
    target_treeids: list[int] | None = None,
    target_weights: list[float] | None = None,
) -> np.ndarray:
    """TreeEnsembleRegressor 1: version 3 without the ``*_as_tensor`` (double) attributes."""
    return tree_ensemble_regressor_v3(
        x,
        n_targets=n_targets,
        aggregate_function=aggregate_function,
        post_transform=post_transform,
        base_values=base_values,
        nodes_featureids=nodes_featureids,
        nodes_modes=nodes_modes,
        nodes_nodeids=nodes_nodeids,
        nodes_treeids=nodes_treeids,
        nodes_truenodeids=nodes_truenodeids,
        nodes_falsenodeids=nodes_falsenodeids,
        nodes_missing_value_tracks_true=nodes_missing_value_tracks_true,
        nodes_values=nodes_values,
        nodes_hitrates=nodes_hitrates,
        target_ids=target_ids,
        target_nodeids=target_nodeids,
        target_treeids=target_treeids,
        target_weights=target_weights,
    )


def _classify_many(
    scores: np.ndarray, has: np.ndarray, base: np.ndarray, post: str
) -> tuple[np.ndarray, np.ndarray]:
    """More than two classes: base values added (they count as votes), the label is the
    best class that got a vote, and every score is transformed."""
    if base.size:
        scores, has = scores + base, np.ones_like(has)
    best = np.argmax(np.where(has, scores, -np.inf), axis=1)
    return best, _transform(scores, post)


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
    out[two] = _transform(pair, post) if pair.size else pair
    out[~two] = _lone_scores(s0[~two], kind[~two], post)
    if not one_class:  # the top class, as the spec says (onnxruntime: 1 whenever s1 > 0)
        positive = np.argmax(np.where(np.isnan(out), -np.inf, out), axis=1) == 1
    return positive.astype(np.int64), out


def _lone_scores(score: np.ndarray, kind: np.ndarray, post: str) -> np.ndarray:
    """Both columns from one score: (1 - s, s) when the weights are all positive, (-s, s)
    or their logistics when mixed, else (s, 0); PROBIT transforms the score alone."""
    out = np.zeros((score.size, 2))
    if post == "PROBIT":
        out[:, 0] = _probit(score)
        return out
    complement = (kind == 0) | (kind == 1)
    mixed = kind >= 2
    out[:, 0] = np.where(complement, 1.0 - score, np.where(mixed, -score, score))
    out[:, 1] = np.where(complement | mixed, score, 0.0)
    if post == "LOGISTIC":
        out[mixed, 0] = _logistic(-score[mixed])
        out[mixed, 1] = _logistic(score[mixed])
    return out


@kernel("TreeEnsembleClassifier", since=3)
def tree_ensemble_classifier_v3(
    x: np.ndarray,
    *,
    classlabels_int64s: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    post_transform: str = "NONE",
    base_values: list[float] | None = None,
    base_values_as_tensor: np.ndarray | None = None,
    nodes_featureids: list[int] | None = None,
    nodes_modes: list[str] | None = None,
    nodes_nodeids: list[int] | None = None,
    nodes_treeids: list[int] | None = None,
    nodes_truenodeids: list[int] | None = None,
    nodes_falsenodeids: list[int] | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    nodes_values: list[float] | None = None,
    nodes_values_as_tensor: np.ndarray | None = None,
    nodes_hitrates: list[float] | None = None,
    nodes_hitrates_as_tensor: np.ndarray | None = None,
    class_ids: list[int] | None = None,
    class_nodeids: list[int] | None = None,
    class_treeids: list[int] | None = None,
    class_weights: list[float] | None = None,
    class_weights_as_tensor: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The label (N) and the class scores (N, classes; float32) from the leaves' class
    votes summed over the trees, plus base_values, post-transformed."""
    del nodes_hitrates, nodes_hitrates_as_tensor  # hints only
    op = "TreeEnsembleClassifier"
    _check_enum(op, "post_transform", post_transform, _TRANSFORMS)
    if bool(classlabels_int64s) == bool(classlabels_strings):
        raise ValueError(f"{op}: exactly one of classlabels_int64s and classlabels_strings is set")
    labels: np.ndarray = (
        np.asarray(classlabels_int64s, dtype=np.int64)
        if classlabels_int64s
        else np.array(classlabels_strings, dtype=object)
    )
    if labels.size < 2:
        raise ValueError(f"{op}: {labels.size} class label is not supported; expected 2 or more")
    nodes = _node_attributes(
        op,
        nodes_featureids,
        nodes_modes,
        nodes_nodeids,
        nodes_treeids,
        nodes_truenodeids,
        nodes_falsenodeids,
        nodes_missing_value_tracks_true,
        _pick(op, nodes_values, nodes_values_as_tensor, "nodes_values"),
    )
    weights = _pick(op, class_weights, class_weights_as_tensor, "class_weights")
    votes = (class_treeids or [], class_nodeids or [], class_ids or [], weights)
    forest = _v3_forest(op, x.dtype, nodes, votes, labels.size)
    data = _features(x, op, forest)
    scores, has = _predict(forest, data, labels.size, "SUM")
    base = _pick(op, base_values, base_values_as_tensor, "base_values")
    if labels.size > 2:
        if base.size not in (0, labels.size):
            raise ValueError(f"{op}: {base.size} base_values for {labels.size} classes")
        best, z = _classify_many(scores, has, base, post_transform)
        return labels[best], z.astype(np.float32)
    if base.size > 2:
        raise ValueError(f"{op}: {base.size} base_values for 2 classes; expected 0, 1 or 2")
    one_class = np.unique(np.asarray(class_ids or [])).size == 1
    positive, z = _classify_two(
        scores, has, base, post_transform, one_class, bool((weights >= 0).all())
    )
    return labels[positive], z.astype(np.float32)


@kernel("TreeEnsembleClassifier", since=1)
def tree_ensemble_classifier_v1(
    x: np.ndarray,
    *,
    classlabels_int64s: list[int] | None = None,
    classlabels_strings: list[str] | None = None,
    post_transform: str = "NONE",
    base_values: list[float] | None = None,
    nodes_featureids: list[int] | None = None,
    nodes_modes: list[str] | None = None,
    nodes_nodeids: list[int] | None = None,
    nodes_treeids: list[int] | None = None,
    nodes_truenodeids: list[int] | None = None,
    nodes_falsenodeids: list[int] | None = None,
    nodes_missing_value_tracks_true: list[int] | None = None,
    nodes_values: list[float] | None = None,
    nodes_hitrates: list[float] | None = None,
    class_ids: list[int] | None = None,
    class_nodeids: list[int] | None = None,
    class_treeids: list[int] | None = None,
    class_weights: list[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """TreeEnsembleClassifier 1: version 3 without the ``*_as_tensor`` (double) attributes."""
    return tree_ensemble_classifier_v3(
        x,
        classlabels_int64s=classlabels_int64s,
        classlabels_strings=classlabels_strings,
        post_transform=post_transform,
        base_values=base_values,
        nodes_featureids=nodes_featureids,
        nodes_modes=nodes_modes,
        nodes_nodeids=nodes_nodeids,
        nodes_treeids=nodes_treeids,
        nodes_truenodeids=nodes_truenodeids,
        nodes_falsenodeids=nodes_falsenodeids,
        nodes_missing_value_tracks_true=nodes_missing_value_tracks_true,
        nodes_values=nodes_values,
        nodes_hitrates=nodes_hitrates,
        class_ids=class_ids,
        class_nodeids=class_nodeids,
        class_treeids=class_treeids,
        class_weights=class_weights,
    )
