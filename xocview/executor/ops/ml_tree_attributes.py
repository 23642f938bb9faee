"""What TreeEnsembleRegressor and TreeEnsembleClassifier (ai.onnx.ml 1 and 3) share: their
trees, whose nodes are addressed by (tree id, node id), and most of their attributes.

Those are post_transform, base_values, the nodes_* lists and the votes (``target_*`` for the
regressor, ``class_*`` for the classifier); version 3 adds an ``*_as_tensor`` (double) twin to
each float list, and version 1 is version 3 without them. ``_shared_attributes`` declares them
once; ``register_tree_op`` makes an op's kernels from a function of X, those attributes (as
``Trees``) and the op's own ones, with a signature that lists every attribute, which the
runtime reads as it reads any kernel's.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.executor.ops.ml_common import bind_call, register_older_version
from xocview.executor.ops.ml_forest import LEAF, MODE_NAMES, Forest, same_length, work_dtype
from xocview.executor.registry import kernel

__all__ = ["Trees", "check_enum", "register_tree_op"]


def _v3_forest(
    op: str,
    x_dtype: np.dtype,
    nodes: dict[str, Any],
    votes: tuple[Any, Any, Any, Any],
    targets: int,
) -> Forest:
    """The older ops' (tree id, node id) addressed nodes and votes as a forest.

    ``votes`` is (tree ids, node ids, target ids, weights). Each tree's root is its first
    node in the lists, as the reference takes it. ValueError for unknown links and modes.
    """
    optional = ("nodes_values", "nodes_missing_value_tracks_true")
    size = same_length(op, **{k: v for k, v in nodes.items() if k not in optional or np.size(v)})
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
    known = {name: k for k, name in enumerate(MODE_NAMES)} | {"LEAF": LEAF}
    for name in names:
        if name not in known:
            raise ValueError(f"{op}: nodes_modes {name!r} is not supported; expected {known}")
    mode = np.array([known[n] for n in names], dtype=np.int64)[codes.reshape(-1)]
    leaf = mode == LEAF
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
    return Forest(
        feature=np.where(leaf, 0, np.asarray(nodes["nodes_featureids"], dtype=np.int64)),
        threshold=values.astype(work_dtype(x_dtype)),
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


def _csr_votes(
    leaf: np.ndarray, target: np.ndarray, weight: np.ndarray, leaves: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Votes grouped by leaf: (start, count) per leaf and the votes' targets and weights."""
    order = np.argsort(leaf, kind="stable")
    count = np.bincount(leaf, minlength=leaves)
    start = np.cumsum(count) - count
    return start, count, target[order], weight[order]


def check_enum(op: str, name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{op}: {name} {value!r} is not supported; expected one of {allowed}")


_INTS, _FLOATS, _TENSOR = "list[int] | None", "list[float] | None", "np.ndarray | None"

# The nodes' attributes, one entry per node in each, read as lists (empty when not given).
_NODE_LISTS: dict[str, str] = {
    "nodes_featureids": _INTS,
    "nodes_modes": "list[str] | None",
    "nodes_nodeids": _INTS,
    "nodes_treeids": _INTS,
    "nodes_truenodeids": _INTS,
    "nodes_falsenodeids": _INTS,
    "nodes_missing_value_tracks_true": _INTS,
}


def _shared_attributes(votes: str) -> list[inspect.Parameter]:
    """The attributes both ops have in version 3, in the spec's order, as keyword-only
    parameters; ``votes`` names the vote lists (``target`` or ``class``). nodes_hitrates are
    hints for faster evaluation: no kernel reads them."""
    types = {
        "post_transform": "str",
        "base_values": _FLOATS,
        "base_values_as_tensor": _TENSOR,
        **_NODE_LISTS,
        "nodes_values": _FLOATS,
        "nodes_values_as_tensor": _TENSOR,
        "nodes_hitrates": _FLOATS,
        "nodes_hitrates_as_tensor": _TENSOR,
        f"{votes}_ids": _INTS,
        f"{votes}_nodeids": _INTS,
        f"{votes}_treeids": _INTS,
        f"{votes}_weights": _FLOATS,
        f"{votes}_weights_as_tensor": _TENSOR,
    }
    keyword = inspect.Parameter.KEYWORD_ONLY
    return [
        inspect.Parameter(
            name, keyword, default="NONE" if name == "post_transform" else None, annotation=t
        )
        for name, t in types.items()
    ]


@dataclass(frozen=True)
class Trees:
    """The shared attributes of one call (None where not given), for ``op`` whose vote lists
    are named ``votes``_*."""

    op: str
    votes: str
    attributes: dict[str, Any]

    @property
    def post_transform(self) -> str:
        return self.attributes["post_transform"]

    @property
    def vote_ids(self) -> list[int] | None:
        """``target_ids`` or ``class_ids``: the target or class of each vote."""
        return self.attributes[f"{self.votes}_ids"]

    def floats(self, name: str) -> np.ndarray:
        """``name`` or ``name_as_tensor`` (double values), whichever is set, as float64."""
        floats, tensor = self.attributes[name], self.attributes[f"{name}_as_tensor"]
        if floats and tensor is not None and np.size(tensor):
            raise ValueError(f"{self.op}: {name} and {name}_as_tensor are both set")
        if tensor is not None and np.size(tensor):
            return np.asarray(tensor, dtype=np.float64).reshape(-1)
        return np.asarray(floats or [], dtype=np.float32).astype(np.float64)

    def vote_weights(self) -> np.ndarray:
        return self.floats(f"{self.votes}_weights")

    def forest(self, x_dtype: np.dtype, targets: int) -> Forest:
        """The trees as a Forest for ``targets`` targets or classes."""
        nodes = {name: self.attributes[name] or [] for name in _NODE_LISTS}
        nodes["nodes_values"] = self.floats("nodes_values")
        weights = self.vote_weights()
        tree, node = (self.attributes[f"{self.votes}_{k}"] or [] for k in ("treeids", "nodeids"))
        return _v3_forest(
            self.op, x_dtype, nodes, (tree, node, self.vote_ids or [], weights), targets
        )


def register_tree_op(
    op_type: str, votes: str, run: Callable[..., Any]
) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Register versions 1 and 3 of ``op_type``, which call ``run(x, trees, **own)``: ``own``
    are run's keyword-only parameters (the op's own attributes), ``trees`` the shared ones.
    The kernels' signatures list X, run's attributes, then the shared ones; returns them."""
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", op_type).lower()  # TreeEnsembleRegressor: tree_...
    own = [p for p in inspect.signature(run).parameters.values() if p.kind is p.KEYWORD_ONLY]
    x = inspect.Parameter("x", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation="np.ndarray")
    signature = inspect.Signature(
        [x, *own, *_shared_attributes(votes)],
        return_annotation=inspect.signature(run).return_annotation,
    )

    def newest(*args: Any, **kwargs: Any) -> Any:
        attributes = dict(bind_call(signature, f"{name}_v3", args, kwargs).arguments)
        data = attributes.pop("x")
        mine = {p.name: attributes.pop(p.name) for p in own}
        return run(data, Trees(op_type, votes, attributes), **mine)

    newest.__signature__ = signature  # type: ignore[attr-defined]
    newest.__name__ = newest.__qualname__ = f"{name}_v3"
    newest.__doc__ = run.__doc__
    kernel(op_type, since=3)(newest)
    oldest = register_older_version(newest, op_type, 1, lacking="_as_tensor", name=f"{name}_v1")
    return oldest, newest
