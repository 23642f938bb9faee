"""xocview/model/index.py and hierarchy.py: derived arrays, groups and the visible graph."""

from __future__ import annotations

import numpy as np
import pytest

from xocview.model import Graph, Hierarchy, Node, Tensor, visible_graph


def chain(n_nodes: int = 3) -> Graph:
    """x -> n0 -> t1 -> n1 -> t2 ... with a weight w feeding n0."""
    tensors = [Tensor("x", "input", [1], "float32"), Tensor("w", "weight", [1], "float32")]
    tensors += [Tensor(f"t{i + 1}", "activation", [1], "float32") for i in range(n_nodes)]
    tensors[-1].kind = "output"
    nodes = [Node("n0", "Add", [0, 1], [2])]
    nodes += [Node(f"n{i}", "Relu", [i + 1], [i + 2]) for i in range(1, n_nodes)]
    return Graph("g", "g", tensors, nodes, [0], [len(tensors) - 1])


def test_producers_consumers_edges_and_order() -> None:
    g = chain(3)
    ix = g.index
    assert ix.producer.tolist() == [-1, -1, 0, 1, 2]
    assert ix.consumers_of(0).tolist() == [0] and ix.consumers_of(2).tolist() == [1]
    assert list(zip(ix.edge_src.tolist(), ix.edge_dst.tolist(), strict=True)) == [(0, 1), (1, 2)]
    assert ix.topo_order.tolist() == [0, 1, 2]


def test_topological_order_of_a_reordered_graph_and_cycles() -> None:
    g = chain(3)
    g.nodes.reverse()  # n2, n1, n0 in the file: the order must still run n0 first
    g.invalidate()
    order = [g.nodes[i].id for i in g.index.topo_order]
    assert order == ["n0", "n1", "n2"]
    g.nodes[2].inputs = [0, 4]  # n0 now reads n2's output: a cycle
    g.invalidate()
    assert g.index.has_cycle and len(g.index.topo_order) == 0


def test_invalidate_rebuilds_after_an_edit_and_lookups_name_missing_ids() -> None:
    g = chain(2)
    assert g.node("n1").op_type == "Relu"
    g.nodes[1].id = "renamed"
    g.invalidate()
    assert g.node("renamed").op_type == "Relu"
    with pytest.raises(KeyError, match="no node with id 'n1'"):
        g.node("n1")
    with pytest.raises(KeyError, match="no tensor with id 'zz'"):
        g.tensor("zz")


def test_out_of_range_references_are_skipped_not_fatal() -> None:
    g = chain(2)
    g.nodes[1].inputs = [2, 99]
    g.invalidate()
    assert g.index.consumers_of(2).tolist() == [1]


def grouped() -> Graph:
    """chain(4) with n1, n2 in group 'blk' (op Block), and 'blk' inside 'top'."""
    g = chain(4)
    g.nodes.append(
        Node("blk", "Block", [], [], {}, {"children_ids": ["n1", "n2"], "parent_id": "top"})
    )
    g.nodes.append(Node("top", "Block", [], [], {}, {"children_ids": ["blk"]}))
    g.nodes[1].metadata["parent_id"] = "blk"
    g.nodes[2].metadata["parent_id"] = "blk"
    g.invalidate()
    return g


def names(g: Graph, v: object) -> list[str]:
    vis = v  # VisibleGraph
    return [g.nodes[i].id for i in vis.node_items] + [g.tensors[t].id for t in vis.tensor_items]


def test_hierarchy_parents_depths_and_groups() -> None:
    g = grouped()
    h = Hierarchy(g)
    pos = {nd.id: i for i, nd in enumerate(g.nodes)}
    assert h.parent[pos["n1"]] == pos["blk"] and h.parent[pos["blk"]] == pos["top"]
    assert h.depth[pos["n1"]] == 2 and h.max_depth == 2
    assert h.is_group[pos["blk"]] and not h.is_group[pos["n1"]]


def test_one_sided_links_still_make_a_group() -> None:
    g = chain(3)
    g.nodes.append(Node("grp", "Block", [], [], {}, {"children_ids": ["n1"]}))
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent[1] == 3  # children_ids alone is enough


def test_collapsed_groups_stand_for_their_members() -> None:
    g = grouped()
    v = visible_graph(g, (), tensor_kinds=())
    assert names(g, v) == ["n0", "n3", "top"]
    edges = {
        (names(g, v)[a], names(g, v)[b], g.tensors[t].id)
        for a, b, t in zip(v.edge_src, v.edge_dst, v.edge_tensor, strict=True)
    }
    assert edges == {("n0", "top", "t1"), ("top", "n3", "t3")}


def test_expanding_shows_the_next_level_and_frames() -> None:
    g = grouped()
    v = visible_graph(g, ["top"], tensor_kinds=())
    assert names(g, v) == ["n0", "n3", "blk"]
    assert [g.nodes[i].id for i in v.frames] == ["top"]
    item = names(g, v).index("blk")
    assert g.nodes[v.frame_of_item[item]].id == "top"
    v2 = visible_graph(g, ["top", "blk"], tensor_kinds=())
    assert names(g, v2) == ["n0", "n1", "n2", "n3"]
    assert sorted(g.nodes[i].id for i in v2.frames) == ["blk", "top"]


def test_no_self_edges_and_no_duplicates_inside_a_collapsed_group() -> None:
    g = grouped()
    g.nodes[2].inputs = [3, 3]  # n2 reads t2 twice
    g.invalidate()
    v = visible_graph(g, (), tensor_kinds=())
    assert np.all(v.edge_src != v.edge_dst)
    triples = list(
        zip(v.edge_src.tolist(), v.edge_dst.tolist(), v.edge_tensor.tolist(), strict=True)
    )
    assert len(triples) == len(set(triples))


def test_tensor_items_for_inputs_outputs_and_weights() -> None:
    g = chain(2)
    v = visible_graph(g, ())
    assert names(g, v) == ["n0", "n1", "x", "w", "t2"]
    v = visible_graph(g, (), tensor_kinds=("input", "output"))
    assert names(g, v) == ["n0", "n1", "x", "t2"]
    labels = names(g, v)
    edges = {(labels[a], labels[b]) for a, b in zip(v.edge_src, v.edge_dst, strict=True)}
    assert edges == {("x", "n0"), ("n0", "n1"), ("n1", "t2")}
