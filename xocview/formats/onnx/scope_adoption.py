"""Top-level ONNX nodes left without a name scope, placed in the scope their neighbours share.

The reader groups torch exports' nodes by the scope in their names (``/a/b/Op``); an exporter's
rewrite can leave a node unnamed between named ones, which would then sit outside its block.
"""

from __future__ import annotations

from xocview.model import Graph

__all__ = ["adopt_loose_nodes"]


def adopt_loose_nodes(graph: Graph, top: list[int], scoped: dict[str, list[int]]) -> None:
    """Top-level nodes that an exporter's rewrite left without a scope (dynamo splits a
    fused QKV projection with an unnamed Split) join the deepest scope their producers and
    consumers share, when every one of those has a scope; else they stay at the top."""
    nodes = graph.nodes
    prefix_of = {p: prefix for prefix, members in scoped.items() for p in members}
    loose = [
        p
        for p in top
        if p not in prefix_of
        and "children_ids" not in nodes[p].metadata
        and "parent_id" not in nodes[p].metadata
    ]
    if not loose:
        return
    producer: dict[int, int] = {}
    consumers: dict[int, list[int]] = {}
    for p in top:
        for t in nodes[p].outputs:
            producer[t] = p
        for t in nodes[p].inputs:
            consumers.setdefault(t, []).append(p)
    ends = set(graph.inputs) | set(graph.outputs)  # the outside: no scope
    for p in loose:
        node = nodes[p]
        if any(t in ends for t in node.inputs) or any(t in ends for t in node.outputs):
            continue
        near = [producer[t] for t in node.inputs if t in producer]  # weights: no producer
        near += [c for t in node.outputs for c in consumers.get(t, ())]
        if not near or any(q not in prefix_of for q in near):
            continue
        common = _common_start([prefix_of[q].split("/") for q in near])
        if len(common) > 1:  # "" and at least one scope
            members = scoped.setdefault("/".join(common), [])
            members.append(p)
            members.sort()


def _common_start(paths: list[list[str]]) -> list[str]:
    """The parts all ``paths`` start with."""
    first = paths[0]
    n = min(len(p) for p in paths)
    for k in range(n):
        if any(p[k] != first[k] for p in paths):
            return first[:k]
    return first[:n]
