"""Edits of the graph's structure: delete or bypass a node, group and ungroup nodes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from xocview.errors import EditError
from xocview.model.edits.lookup import (
    check_new_id,
    children_of,
    node_pos,
    parent_of,
    unique_id,
    with_key,
    without_key,
)
from xocview.model.edits.reinfer import edit_with_types
from xocview.model.edits.steps import Edit, InsertNode, RemoveNode, RemoveTensor, SetField, Step
from xocview.model.graph import Node

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = ["bypass_node", "delete_node", "group_nodes", "ungroup"]


class _Metas:
    """New metadata per node position, gathered so that each node gets one SetField."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.new: dict[int, dict[str, Any]] = {}

    def get(self, pos: int) -> dict[str, Any]:
        return self.new.get(pos, self.graph.nodes[pos].metadata)

    def set(self, pos: int, key: str, value: Any) -> None:
        self.new[pos] = with_key(self.get(pos), key, value)

    def drop(self, pos: int, key: str) -> None:
        if key in self.get(pos):
            self.new[pos] = without_key(self.get(pos), key)

    def kids(self, pos: int) -> list[str]:
        kids = self.get(pos).get("children_ids")
        return list(kids) if isinstance(kids, list) else []

    def steps(self) -> list[Step]:
        nodes = self.graph.nodes
        return [
            SetField(("node", i), "metadata", nodes[i].metadata, m) for i, m in self.new.items()
        ]


def _refuse_group(graph: Graph, node: Node, what: str) -> None:
    kids = children_of(graph, node)
    if kids:
        raise EditError(
            f"node '{node.id}' is a group of {len(kids)} nodes and cannot be {what}; "
            "ungroup it first"
        )


def _detach(graph: Graph, node: Node, metas: _Metas) -> None:
    """Take the node out of its parent's ``children_ids``."""
    parent = parent_of(graph, node)
    if parent is not None and node.id in metas.kids(parent):
        metas.set(parent, "children_ids", [k for k in metas.kids(parent) if k != node.id])


def _removable(graph: Graph, tensors: Sequence[int], gone: int) -> list[int]:
    """Those of ``tensors`` that nothing but node ``gone`` refers to, highest position first."""
    used = set(graph.inputs) | set(graph.outputs)
    for i, node in enumerate(graph.nodes):
        if i != gone:
            used.update(node.inputs)
            used.update(node.outputs)
    return sorted({t for t in tensors if t not in used}, reverse=True)


def _remove(graph: Graph, pos: int, tensors: list[int]) -> list[Step]:
    return [
        RemoveNode(pos, graph.nodes[pos]),
        *(RemoveTensor(t, graph.tensors[t]) for t in tensors),
    ]


def delete_node(graph: Graph, node_id: str) -> Edit:
    """Delete a node. Its output tensors go unless another node uses them or they are graph
    inputs or outputs: a consumer keeps its input, now with no producer (a dangling input that
    ``check`` reports). Tensors it only reads (its weights) stay. Raises EditError for an
    unknown node and for a group (ungroup it first).
    """
    pos = node_pos(graph, node_id)
    node = graph.nodes[pos]
    _refuse_group(graph, node, "deleted")
    metas = _Metas(graph)
    _detach(graph, node, metas)
    steps = metas.steps() + _remove(graph, pos, _removable(graph, node.outputs, pos))
    edit = Edit(f"delete node '{node_id}'", tuple(steps))
    edit.apply(graph)
    return edit


def bypass_node(graph: Graph, node_id: str) -> Edit:
    """Remove a node with one data input (weights aside) and one output that is read (others
    nobody reads, such as a Dropout's mask, go with it), its consumers reading its input
    instead. A graph output it wrote passes to its input. Raises EditError for an unknown
    node, a group, or a node with another number of data inputs or read outputs.
    """
    pos = node_pos(graph, node_id)
    node = graph.nodes[pos]
    _refuse_group(graph, node, "bypassed")
    tensors = graph.tensors
    data = list(dict.fromkeys(t for t in node.inputs if tensors[t].kind != "weight"))
    outs = list(dict.fromkeys(node.outputs))
    # outputs nobody reads (a Dropout's mask) go with the node: only the first one passes on
    read = {t for k, n in enumerate(graph.nodes) if k != pos for t in n.inputs}
    read |= set(graph.outputs)
    unread = [t for t in outs[1:] if t not in read]
    if len(unread) == len(outs) - 1:
        outs = outs[:1]
    if len(data) != 1 or len(outs) != 1 or data == outs:
        names = ", ".join(f"'{tensors[t].id}'" for t in data) or "none"
        raise EditError(
            f"node '{node_id}' has {len(data)} data inputs ({names}) and {len(outs)} outputs; "
            "only a node with one data input and one output can be bypassed; delete it instead"
        )
    i, o = data[0], outs[0]
    steps: list[Step] = []
    for k, other in enumerate(graph.nodes):
        if k != pos and o in other.inputs:
            new = [i if t == o else t for t in other.inputs]
            steps.append(SetField(("node", k), "inputs", other.inputs, new))
    if o in graph.outputs:
        new_out = [i if t == o else t for t in graph.outputs]
        new_out = list(dict.fromkeys(new_out))  # i may already be an output
        steps.append(SetField(("graph", 0), "outputs", graph.outputs, new_out))
        if tensors[o].kind == "output" and tensors[i].kind == "activation":
            steps.append(SetField(("tensor", i), "kind", "activation", "output"))
    metas = _Metas(graph)
    _detach(graph, node, metas)
    steps += metas.steps()
    # the output goes unless another node still writes it or it is a graph input
    gone = [t for t in [o, *unread] if t not in graph.inputs]
    gone = [
        t for t in gone if not any(t in n.outputs for k, n in enumerate(graph.nodes) if k != pos)
    ]
    steps += _remove(graph, pos, sorted(gone, reverse=True))
    # the consumers now read the node's input: they and all downstream are inferred again
    kept = i - sum(t < i for t in gone)  # the input's position once those tensors are gone
    return edit_with_types(graph, f"bypass node '{node_id}'", steps, tensors=[kept])


def group_nodes(
    graph: Graph, node_ids: Sequence[str], group_id: str | None = None, op_type: str = "Group"
) -> Edit:
    """Put nodes into a new group (appended to the nodes). The group sits inside the nodes'
    common parent when they share one, else at the top level; each node leaves its old parent.

    Raises EditError for an empty selection, a repeated or unknown id, or a taken group id.
    """
    if isinstance(node_ids, str) or not node_ids:
        raise EditError("no nodes to group; give a list of one or more node ids")
    if len(set(node_ids)) != len(node_ids):
        raise EditError("a node id is given twice in the selection; give each node once")
    picked = sorted(node_pos(graph, nid) for nid in node_ids)
    if not isinstance(op_type, str) or not op_type:
        raise EditError(f"group op type {op_type!r} is empty; give a name such as 'Group'")
    gid = unique_id(graph, "node", "group") if group_id is None else group_id
    check_new_id(graph, "node", gid)
    nodes = graph.nodes
    parents = [parent_of(graph, nodes[p]) for p in picked]
    common = parents[0] if len(set(parents)) == 1 else None
    metas = _Metas(graph)
    chosen = {nodes[p].id for p in picked}
    for parent in dict.fromkeys(q for q in parents if q is not None):
        kids = metas.kids(parent)
        if parent == common:
            first = next((k for k, c in enumerate(kids) if c in chosen), len(kids))
            kids = [*kids[:first], gid, *kids[first:]]
        metas.set(parent, "children_ids", [c for c in kids if c not in chosen])
    for p in picked:
        metas.set(p, "parent_id", gid)
    meta: dict[str, Any] = {"children_ids": [nodes[p].id for p in picked]}
    if common is not None:
        meta["parent_id"] = nodes[common].id
    group = Node(gid, op_type, [], [], {}, meta)
    steps = [*metas.steps(), InsertNode(len(nodes), group)]
    edit = Edit(f"group {len(picked)} nodes into '{gid}'", tuple(steps))
    edit.apply(graph)
    return edit


def ungroup(graph: Graph, group_id: str) -> Edit:
    """Dissolve a group: its children move up to the group's parent (or the top level) and the
    group node goes. Raises EditError for an unknown node, a node with no children, and a group
    that is an operator with inputs or outputs of its own (If, Loop, Scan).
    """
    pos = node_pos(graph, group_id)
    group = graph.nodes[pos]
    kids = children_of(graph, group)
    if not kids:
        raise EditError(f"node '{group_id}' has no children, so it is not a group to ungroup")
    if group.inputs or group.outputs:
        raise EditError(
            f"group '{group_id}' is a {group.op_type} operator with inputs and outputs of its "
            "own; its children are its body and cannot leave it"
        )
    parent = parent_of(graph, group)
    metas = _Metas(graph)
    kid_ids = [graph.nodes[k].id for k in kids]
    for k in kids:
        if parent is None:
            metas.drop(k, "parent_id")
        else:
            metas.set(k, "parent_id", graph.nodes[parent].id)
    if parent is not None:
        siblings = metas.kids(parent)
        at = siblings.index(group_id) if group_id in siblings else len(siblings)
        before, after = siblings[:at], siblings[at + 1 :]
        ids = [*before, *kid_ids, *after]
        metas.set(parent, "children_ids", list(dict.fromkeys(ids)))
    steps = [*metas.steps(), RemoveNode(pos, group)]
    edit = Edit(f"ungroup '{group_id}'", tuple(steps))
    edit.apply(graph)
    return edit
