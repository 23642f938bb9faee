"""An open Loop or Scan's body inputs tied to the outer values that feed them.

A body's formal inputs (a Loop's iteration count, condition and carried values, a Scan's
states and slices) are bound by position to its node's inputs. Drawn alone inside the body's
frame they read as values from nowhere; here each one gets the edge of the outer value bound
to it, from whatever draws that value (its producer, or the node's own box when the value is
folded into it), in place of that value's edge into the node's box. Values a body captures by
name need nothing: its readers read the outer tensor itself, so its edges reach them already.
"""

from __future__ import annotations

import numpy as np

from xocview.model import Graph, Node, VisibleGraph

__all__ = ["feed_body_inputs"]


def feed_body_inputs(graph: Graph, vis: VisibleGraph) -> VisibleGraph:
    """``vis`` with an edge from each drawn body input's outer value (see the module)."""
    nn = len(vis.node_items)
    index = graph.index
    src: list[int] = []
    dst: list[int] = []
    tensor: list[int] = []
    replaced = np.zeros(len(vis.edge_src), dtype=bool)
    for k, t in enumerate(vis.tensor_items.tolist()):
        owner_id = graph.tensors[t].metadata.get("subgraph_of")
        if not isinstance(owner_id, str) or not index.has_node(owner_id):
            continue
        g = index.node_position(owner_id)
        head = int(vis.item_of_node[g])
        outer = _bound(graph.nodes[g], graph.tensors[t].id)
        if head < 0 or outer is None:
            continue
        into_head = np.flatnonzero((vis.edge_tensor == outer) & (vis.edge_dst == head))
        froms = vis.edge_src[into_head].tolist() or [head]
        replaced[into_head] = True
        src += froms
        dst += [nn + k] * len(froms)
        tensor += [outer] * len(froms)
    if not src:
        return vis
    keep = ~replaced
    return VisibleGraph(
        node_items=vis.node_items,
        tensor_items=vis.tensor_items,
        edge_src=np.concatenate([vis.edge_src[keep], np.asarray(src, dtype=np.int64)]),
        edge_dst=np.concatenate([vis.edge_dst[keep], np.asarray(dst, dtype=np.int64)]),
        edge_tensor=np.concatenate([vis.edge_tensor[keep], np.asarray(tensor, dtype=np.int64)]),
        item_of_node=vis.item_of_node,
        frame_of_item=vis.frame_of_item,
        frames=vis.frames,
    )


def _bound(node: Node, formal: str) -> int | None:
    """The tensor position of ``node``'s input bound to body input ``formal``, or None.

    Inputs bind by position from the end, so that a Scan of opset 8, whose first input
    (sequence lengths) has no body input, binds as later ones do; an omitted optional input
    (a Loop without a trip count) binds nothing."""
    for value in node.attributes.values():
        formals = value.get("inputs") if isinstance(value, dict) else None
        if not isinstance(formals, list) or formal not in formals:
            continue
        omitted = node.metadata.get("omitted_inputs") or []
        width = len(node.inputs) + len(omitted)
        position = width - len(formals) + formals.index(formal)
        if position < 0 or position in omitted:
            return None
        k = position - sum(1 for p in omitted if isinstance(p, int) and p < position)
        return int(node.inputs[k]) if 0 <= k < len(node.inputs) else None
    return None
