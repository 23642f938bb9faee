"""The visible graph as the canvas draws it: an open If/Loop/Scan gets a frame per body, a
body's own inputs sit inside its node's frame, and constant-making nodes that read only
weights fold into the boxes that read them."""

from __future__ import annotations

import numpy as np

from xocview.model import Graph, VisibleGraph
from xocview.model.boxes import folded_constants

__all__ = ["branch_frames", "fold_constants", "place_body_inputs"]


def branch_frames(
    graph: Graph,
    vis: VisibleGraph,
    member: np.ndarray,
    parent: np.ndarray,
    owner: np.ndarray,
    frames: list[int],
    titles: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[str]]:
    """An open If, Loop or Scan gets a frame per body (``then_branch``, ``else_branch``,
    ``body``) inside its own, so that the branches are told apart."""
    member = member.copy()
    parents: list[int] = parent.tolist()
    owners: list[int] = owner.tolist()
    frames, titles = list(frames), list(titles)
    nn = len(vis.node_items)
    node_of_item = np.concatenate([vis.node_items, np.full(len(vis.tensor_items), -1)])
    for slot in range(len(frames)):
        if owners[slot] < 0:
            continue
        mine = np.flatnonzero(member == slot)
        bodies: dict[str, list[int]] = {}
        for k in mine.tolist():
            i = int(node_of_item[k]) if k < nn else _first_consumer(vis, k)
            body = graph.nodes[i].metadata.get("subgraph") if i >= 0 else None
            bodies.setdefault(str(body) if body else "", []).append(k)
        for c in range(len(frames)):
            if parents[c] == slot:
                body = graph.nodes[frames[c]].metadata.get("subgraph")
                bodies.setdefault(str(body) if body else "", []).append(-1 - c)
        named = [b for b in bodies if b]
        if not named:
            continue
        if len(named) == 1 and "" in bodies:  # a Loop's unused iteration count: its one body
            bodies[named[0]] += bodies.pop("")
        for body in sorted(named):
            new = len(frames)
            frames.append(frames[slot])
            titles.append(body)
            parents.append(slot)
            owners.append(-1)
            for k in bodies[body]:
                if k >= 0:
                    member[k] = new
                else:
                    parents[-1 - k] = new
    return (
        member,
        np.asarray(parents, dtype=np.int64),
        np.asarray(owners, dtype=np.int64),
        frames,
        titles,
    )


def _first_consumer(vis: VisibleGraph, item: int) -> int:
    """The node position of the first node item that ``item`` feeds, or -1."""
    out = vis.edge_dst[vis.edge_src == item]
    out = out[out < len(vis.node_items)]
    return int(vis.node_items[out[0]]) if len(out) else -1


def place_body_inputs(graph: Graph, vis: VisibleGraph) -> VisibleGraph:
    """A body's own inputs (a Loop's iteration count, a Scan's slices) are not the graph's:
    drawn inside the open node's frame, and not at all while it is closed."""
    index = graph.index
    nn = len(vis.node_items)
    frames = set(vis.frames.tolist())
    frame_of = vis.frame_of_item.copy()
    drop = np.zeros(vis.num_items, dtype=bool)
    for k, t in enumerate(vis.tensor_items.tolist()):
        owner_id = graph.tensors[t].metadata.get("subgraph_of")
        if not isinstance(owner_id, str) or not index.has_node(owner_id):
            continue
        g = index.node_position(owner_id)
        if g in frames:
            frame_of[nn + k] = g
        else:
            drop[nn + k] = True
    vis = VisibleGraph(
        node_items=vis.node_items,
        tensor_items=vis.tensor_items,
        edge_src=vis.edge_src,
        edge_dst=vis.edge_dst,
        edge_tensor=vis.edge_tensor,
        item_of_node=vis.item_of_node,
        frame_of_item=frame_of,
        frames=vis.frames,
    )
    return _drop_items(vis, drop) if drop.any() else vis


def fold_constants(
    graph: Graph, vis: VisibleGraph, is_group: np.ndarray
) -> tuple[VisibleGraph, np.ndarray]:
    """``vis`` without the boxes of constant-making nodes that read only weights, and which
    tensors are folded (weights, and what those nodes make); their edges go with them."""
    found = graph.index.derived.get("drawing.folded")  # one answer per graph state
    if not isinstance(found, tuple):
        found = graph.index.derived["drawing.folded"] = folded_constants(graph, is_group)
    node_folded, folded = found
    drop = np.zeros(vis.num_items, dtype=bool)
    drop[: len(vis.node_items)] = node_folded[vis.node_items]
    if not drop.any():
        return vis, folded
    return _drop_items(vis, drop), folded


def _drop_items(vis: VisibleGraph, drop: np.ndarray) -> VisibleGraph:
    """``vis`` without the ``drop`` items and their edges."""
    nn = len(vis.node_items)
    keep = np.flatnonzero(~drop)
    new = np.full(vis.num_items, -1, dtype=np.int64)
    new[keep] = np.arange(len(keep))
    ok = ~drop[vis.edge_src] & ~drop[vis.edge_dst]
    return VisibleGraph(
        node_items=vis.node_items[~drop[:nn]],
        tensor_items=vis.tensor_items[~drop[nn:]],
        edge_src=new[vis.edge_src[ok]],
        edge_dst=new[vis.edge_dst[ok]],
        edge_tensor=vis.edge_tensor[ok],
        item_of_node=np.where(vis.item_of_node >= 0, new[np.maximum(vis.item_of_node, 0)], -1),
        frame_of_item=vis.frame_of_item[keep],
        frames=vis.frames,
    )
