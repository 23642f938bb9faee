"""Small graph builders shared by the tests of xocview/model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xocview.model import Graph, Node, Tensor, VisibleGraph


def tensor(tid: str, kind: str = "activation", shape: Sequence[int] = (1,), **meta: Any) -> Tensor:
    """A float32 tensor; keyword arguments become its metadata."""
    return Tensor(tid, kind, list(shape), "float32", dict(meta))


def node(
    nid: str,
    op: str,
    ins: Sequence[int] = (),
    outs: Sequence[int] = (),
    attributes: dict[str, Any] | None = None,
    **meta: Any,
) -> Node:
    """A node; keyword arguments become its metadata (``parent_id``, ``children_ids``, ...)."""
    return Node(nid, op, list(ins), list(outs), attributes, dict(meta))


def graph(
    tensors: list[Tensor],
    nodes: list[Node],
    inputs: Sequence[int] = (),
    outputs: Sequence[int] = (),
) -> Graph:
    return Graph("g", "g", tensors, nodes, list(inputs), list(outputs))


def chain(n_nodes: int = 3) -> Graph:
    """x -> n0(Add, with weight w) -> t1 -> n1(Relu) -> t2 ... -> n{k}; the last tensor is output.

    Tensor positions: x 0, w 1, t1 2, t2 3, ...; node n{i} writes tensor i + 2.
    """
    tensors = [tensor("x", "input"), tensor("w", "weight")]
    tensors += [tensor(f"t{i + 1}") for i in range(n_nodes)]
    tensors[-1].kind = "output"
    nodes = [node("n0", "Add", [0, 1], [2])]
    nodes += [node(f"n{i}", "Relu", [i + 1], [i + 2]) for i in range(1, n_nodes)]
    return graph(tensors, nodes, [0], [len(tensors) - 1])


def grouped() -> Graph:
    """chain(4) with n1 and n2 in group 'blk', and 'blk' inside group 'top'.

    Node positions: n0 0, n1 1, n2 2, n3 3, blk 4, top 5. Links are written on both sides.
    """
    g = chain(4)
    g.nodes.append(node("blk", "Block", children_ids=["n1", "n2"], parent_id="top"))
    g.nodes.append(node("top", "Block", children_ids=["blk"]))
    g.nodes[1].metadata["parent_id"] = "blk"
    g.nodes[2].metadata["parent_id"] = "blk"
    g.invalidate()
    return g


def positions(g: Graph) -> dict[str, int]:
    """Node id -> position."""
    return {nd.id: i for i, nd in enumerate(g.nodes)}


def ids(g: Graph, node_positions: Any) -> list[str]:
    """The ids of the nodes at these positions, in the given order."""
    return [g.nodes[int(i)].id for i in node_positions]


def labels(g: Graph, v: VisibleGraph) -> list[str]:
    """One label per item: the node id for node items, the tensor id for tensor items."""
    return ids(g, v.node_items) + [g.tensors[int(t)].id for t in v.tensor_items]


def edges(g: Graph, v: VisibleGraph) -> list[tuple[str, str, str]]:
    """The visible edges as (source label, target label, tensor id), in their order."""
    lab = labels(g, v)
    return [
        (lab[a], lab[b], g.tensors[t].id)
        for a, b, t in zip(
            v.edge_src.tolist(), v.edge_dst.tolist(), v.edge_tensor.tolist(), strict=True
        )
    ]
