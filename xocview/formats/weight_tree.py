"""The graph of a file that holds weights and no graph (a state dict, safetensors, GGUF).

Such a file names its tensors by module path (``model.layers.0.self_attn.q_proj.weight``), so
its shape is a module tree: each module that owns tensors is a node reading them as weights
(folded into its box, as any operator's weights are), and each module above is a group, so the
first view shows the top modules and a double-click opens one. A numbered family of modules
(``layers.0`` .. ``layers.31``) is said to repeat when its members hold the same tensors,
which is how a user tells a transformer's stack from a list of unrelated parts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xocview.model import Graph, Node, Tensor
from xocview.model.graph import LazyData

__all__ = ["Weight", "weight_graph"]

# The node of tensors named without a module ("weight", "scale"): the file's top level.
TOP = "(top level)"


@dataclass(frozen=True)
class Weight:
    """One stored tensor: its dotted name, shape, XOC dtype name and lazy values."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    values: np.ndarray | LazyData | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


def weight_graph(
    graph_id: str, name: str, weights: Iterable[Weight], metadata: dict[str, Any] | None = None
) -> Graph:
    """The module tree of ``weights`` as a graph: owners as nodes, their parents as groups."""
    graph = Graph(graph_id, name, metadata={} if metadata is None else metadata)
    owned: dict[str, list[int]] = {}
    for w in weights:
        owner = w.name.rpartition(".")[0] or TOP
        owned.setdefault(owner, []).append(len(graph.tensors))
        graph.tensors.append(Tensor(w.name, "weight", list(w.shape), w.dtype, w.metadata, w.values))
    parents = _parents(owned)
    children: dict[str, list[str]] = {}
    for owner, tensors in owned.items():
        node_id = owner + ":params" if owner in parents else owner
        # "derived": the node stands for a module named by its tensors, not an operator
        meta: dict[str, Any] = {"derived": "weights"}
        if owner != TOP:
            meta["module"] = owner
        cut = len(owner) + 1 if owner != TOP else 0
        meta["input_names"] = [graph.tensors[i].id[cut:] for i in tensors]
        up = owner if owner in parents else _parent(owner)
        if up:
            meta["parent_id"] = up
            children.setdefault(up, []).append(node_id)
        graph.nodes.append(Node(node_id, _last(owner), tensors, [], {}, meta))
    groups = []
    for group in sorted(parents, key=_numbered_order):
        group_meta: dict[str, Any] = {"module": group, "derived": "weights"}
        up = _parent(group)
        if up:
            group_meta["parent_id"] = up
            children.setdefault(up, []).append(group)
        groups.append(Node(group, _last(group), [], [], {}, group_meta))
    for node in groups:
        node.metadata["children_ids"] = children.get(node.id, [])
    graph.nodes.extend(groups)
    _mark_repeats(graph, children)
    return graph


def _parent(path: str) -> str:
    return path.rpartition(".")[0] if path != TOP else ""


def _last(path: str) -> str:
    """A module's label: its own name, with its family's for a numbered one (``layers.3``)."""
    up, _, own = path.rpartition(".")
    return f"{up.rpartition('.')[2]}.{own}" if own.isdigit() and up else own


def _numbered_order(path: str) -> tuple[object, ...]:
    """Sort key putting ``layers.2`` before ``layers.10``."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in path.split("."))


def _parents(owners: Iterable[str]) -> set[str]:
    """Every proper prefix of an owning module: the groups."""
    out: set[str] = set()
    for owner in owners:
        up = _parent(owner)
        while up and up not in out:
            out.add(up)
            up = _parent(up)
    return out


def _mark_repeats(graph: Graph, children: dict[str, list[str]]) -> None:
    """Say on a group of numbered members how many repeat one block (same tensors, by
    relative name, shape and dtype); a family of differing members says how many kinds."""
    by_id = {n.id: n for n in graph.nodes}
    kinds: dict[str, tuple[object, ...]] = {}
    for group, kids in children.items():
        numbered = [k for k in kids if k.rpartition(".")[2].isdigit()]
        if len(numbered) < 2 or len(numbered) != len(kids):
            continue
        signatures = [_signature(graph, by_id, children, k, kinds) for k in numbered]
        distinct = len(set(signatures))
        node = by_id[group]
        node.metadata["repeated_blocks"] = len(numbered)
        if distinct > 1:
            node.metadata["block_kinds"] = distinct


def _signature(
    graph: Graph,
    by_id: dict[str, Node],
    children: dict[str, list[str]],
    module: str,
    memo: dict[str, tuple[object, ...]],
) -> tuple[object, ...]:
    """What a module holds, names relative to it: equal for repeated blocks."""
    if module in memo:
        return memo[module]
    items: list[tuple[object, ...]] = []
    stack = [module]
    cut = len(module) + 1
    while stack:
        current = stack.pop()
        node = by_id[current]
        for i in node.inputs:
            t = graph.tensors[i]
            items.append((t.id[cut:], tuple(t.shape), t.dtype))
        stack.extend(children.get(current, ()))
    memo[module] = result = tuple(sorted(items, key=repr))
    return result
