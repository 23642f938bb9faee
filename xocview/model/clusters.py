"""Derived groups for runs of loose operators that sit beside a graph's own groups.

A TorchScript export of BERT puts its embeddings, encoder and pooler in scope groups, but the
twenty operators that turn ``attention_mask`` into the additive mask have no scope: at the top
level they make a column taller than the rest of the picture, and the first view cannot show
the encoder's layers beside them. Each connected run of such operators (at a level that also
holds groups) becomes one group, marked ``derived: "cluster"``, named for the input it reads
or the group it feeds. Like sections, clusters are a way of drawing, made again on every load
and never saved (``sections.without_sections``).
"""

from __future__ import annotations

import numpy as np

from xocview.model.boxes import BoxCounts
from xocview.model.graph import Graph, Node
from xocview.model.hierarchy import Hierarchy

__all__ = ["CLUSTER_BOXES", "add_cluster_groups"]

CLUSTER_BOXES = 6  # a run of fewer boxes stays loose: it reads as well as a group would
_I = np.int64


def add_cluster_groups(graph: Graph, least: int = CLUSTER_BOXES) -> int:
    """Gather each connected run of at least ``least`` loose boxes, at a level that also holds
    scope groups (made from the file's node names, not groups the file declares: those are
    the user's, kept as they are), into a derived group; returns how many.

    A run that holds half of its level's boxes or more is the level itself, not a part of it
    (a flat graph with one If), and stays as it is."""
    nodes = graph.nodes
    n = len(nodes)
    if not any(nd.metadata.get("derived") == "scope" for nd in nodes):
        return 0  # no scopes: nothing to stand beside (and no index built for nothing)
    h = Hierarchy.of(graph)
    if n == 0 or not h.is_group.any():
        return 0
    index = graph.index
    counts = BoxCounts.of(graph, h)
    has_io, weight = counts.has_io, counts.weight
    scope = np.fromiter((nd.metadata.get("derived") == "scope" for nd in nodes), bool, n)
    level_has_group = np.zeros(n + 1, dtype=bool)  # a level holding scopes, beside the top
    level_has_group[h.parent[scope & ~has_io] + 1] = True
    level_has_group[1:] &= scope  # ... inside a scope: a file's own groups stay as they are
    atom = counts.atom
    unit = _units(h.parent, atom)
    loose = (~h.is_group | atom) & level_has_group[h.parent + 1]
    if not loose.any():
        return 0
    weight = np.where(atom, 1.0, weight)
    label = _components(unit[index.edge_src], unit[index.edge_dst], loose, h.parent)
    level_boxes = np.bincount(h.parent + 1, weights=counts.total, minlength=n + 1)
    runs = np.bincount(label[loose], weights=weight[loose], minlength=n)
    level_of = np.full(n, -1, dtype=_I)
    level_of[label[loose]] = h.parent[loose]
    chosen = np.flatnonzero((runs >= least) & (runs < level_boxes[level_of + 1] / 2))
    if not chosen.size:
        return 0
    members = np.flatnonzero(loose & np.isin(label, chosen))
    by_run = members[np.argsort(label[members], kind="stable")]
    cuts = np.searchsorted(label[by_run], chosen)
    ends = np.r_[cuts[1:], len(by_run)]
    taken = {nd.id for nd in nodes}
    made: list[Node] = []
    for a, b in zip(cuts.tolist(), ends.tolist(), strict=True):
        run = np.sort(by_run[a:b])
        made.append(_group(graph, h, run, taken))
    nodes.extend(made)
    graph.invalidate()
    return len(made)


def _units(parent: np.ndarray, atom: np.ndarray) -> np.ndarray:
    """Each node's box at its level: itself, or the one-op group it lies in (an ATen op run
    as several ONNX ops), whose edges are the group's."""
    unit = np.arange(len(parent), dtype=_I)
    if not atom.any():
        return unit
    while True:
        up = parent[unit]
        move = (up >= 0) & atom[np.maximum(up, 0)]
        if not move.any():
            return unit
        unit[move] = up[move]


def _components(
    src: np.ndarray, dst: np.ndarray, loose: np.ndarray, parent: np.ndarray
) -> np.ndarray:
    """A label per node (the least node of its run) for runs of loose nodes joined by edges
    within one level; other nodes label themselves."""
    label = np.arange(len(loose), dtype=_I)
    keep = loose[src] & loose[dst] & (parent[src] == parent[dst]) & (src != dst)
    a, b = src[keep], dst[keep]
    while a.size:
        new = label.copy()
        np.minimum.at(new, a, label[b])
        np.minimum.at(new, b, label[a])
        new = new[new]  # pointer jumping: a chain settles in a logarithmic number of rounds
        if np.array_equal(new, label):
            break
        label = new
    return label


def _group(graph: Graph, h: Hierarchy, run: np.ndarray, taken: set[str]) -> Node:
    """The derived group of ``run`` (node positions, one level), its members re-parented."""
    nodes = graph.nodes
    p = int(h.parent[run[0]])
    parent_id = nodes[p].id if p >= 0 else None
    gid = f"{parent_id or ''}#ops"
    while gid in taken:
        gid += "+"
    taken.add(gid)
    metadata: dict[str, object] = {"name": _name(graph, h, run), "derived": "cluster"}
    if parent_id is not None:
        metadata["parent_id"] = parent_id
    ids = [nodes[k].id for k in run.tolist()]
    metadata["children_ids"] = ids
    for k in run.tolist():
        nodes[k].metadata = {**nodes[k].metadata, "parent_id": gid}  # may be shared
    if p >= 0:
        old = nodes[p].metadata.get("children_ids")
        moved = set(ids)
        rest = [k for k in old if k not in moved] if isinstance(old, list) else []
        nodes[p].metadata = {**nodes[p].metadata, "children_ids": [gid, *rest]}
    return Node(gid, "Ops", [], [], {}, metadata)


def _name(graph: Graph, h: Hierarchy, run: np.ndarray) -> str:
    """``ops on attention_mask`` (a graph input the run reads), else ``ops before encoder``
    (the first group it feeds), else ``ops``."""
    tensors, nodes = graph.tensors, graph.nodes
    for k in run.tolist():
        for t in nodes[k].inputs:
            if 0 <= t < len(tensors) and tensors[t].kind == "input":
                return f"ops on {tensors[t].id}"
    index = graph.index
    inside = np.zeros(len(nodes), dtype=bool)
    inside[run] = True
    out = inside[index.edge_src] & ~inside[index.edge_dst]
    for reader in index.edge_dst[out].tolist():
        top = reader
        while h.parent[top] >= 0 and h.parent[top] != h.parent[run[0]]:
            top = int(h.parent[top])
        if h.is_group[top]:
            label = nodes[top].metadata.get("name") or nodes[top].id
            return f"ops before {label}"
    return "ops"
