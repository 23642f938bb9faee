"""xocview/model/hierarchy.py: parents and depths of groups, and the visible graph."""

from __future__ import annotations

import numpy as np

from tests.model.conftest import chain, edges, graph, grouped, ids, labels, node, positions, tensor
from xocview.model import Graph, Hierarchy, visible_graph


def two_groups() -> Graph:
    """chain(4) with n0, n1 in top-level group 'ga' and n2, n3 in top-level group 'gb'.

    Node positions: n0 0, n1 1, n2 2, n3 3, ga 4, gb 5. Tensors: x 0, w 1, t1 2, t2 3, t3 4,
    t4 5 (output). t2 is the one tensor crossing from ga to gb.
    """
    g = chain(4)
    g.nodes.append(node("ga", "Block", children_ids=["n0", "n1"]))
    g.nodes.append(node("gb", "Block", children_ids=["n2", "n3"]))
    for i, grp in enumerate(["ga", "ga", "gb", "gb"]):
        g.nodes[i].metadata["parent_id"] = grp
    g.invalidate()
    return g


# -- Hierarchy ---------------------------------------------------------------------------------


def test_parents_depths_and_groups_from_both_sides() -> None:
    g = grouped()
    h = Hierarchy(g)
    p = positions(g)
    assert h.parent.tolist() == [-1, p["blk"], p["blk"], -1, p["top"], -1]
    assert h.depth.tolist() == [0, 2, 2, 0, 1, 0]
    assert h.max_depth == 2
    assert ids(g, np.flatnonzero(h.is_group)) == ["blk", "top"]
    assert h.child_count.tolist() == [0, 0, 0, 0, 2, 1]
    assert ids(g, h.children(p["blk"])) == ["n1", "n2"]
    assert ids(g, h.children(p["n0"])) == []
    assert ids(g, h.ancestors(p["n2"])) == ["blk", "top"]
    assert h.ancestors(p["top"]) == []
    assert not h.in_cycle.any()


def test_a_graph_without_groups_is_flat() -> None:
    h = Hierarchy(chain(3))
    assert h.parent.tolist() == [-1, -1, -1]
    assert h.depth.tolist() == [0, 0, 0]
    assert h.max_depth == 0 and not h.is_group.any()


def test_an_empty_graph_has_depth_zero() -> None:
    h = Hierarchy(graph([], []))
    assert h.max_depth == 0 and len(h.parent) == 0


def test_parent_id_alone_makes_a_group() -> None:
    g = chain(3)
    g.nodes.append(node("grp", "Block"))  # no children_ids
    g.nodes[1].metadata["parent_id"] = "grp"
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, 3, -1, -1]
    assert h.is_group.tolist() == [False, False, False, True]
    assert h.depth[1] == 1


def test_children_ids_alone_make_a_group() -> None:
    g = chain(3)
    g.nodes.append(node("grp", "Block", children_ids=["n1", "n2"]))  # children lack parent_id
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, 3, 3, -1]
    assert h.is_group[3] and h.depth.tolist() == [0, 1, 1, 0]


def test_parent_id_wins_over_another_group_listing_the_node() -> None:
    g = chain(3)
    g.nodes.append(node("ga", "Block", children_ids=["n1"]))
    g.nodes.append(node("gb", "Block"))
    g.nodes[1].metadata["parent_id"] = "gb"
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent[1] == 4
    assert h.is_group.tolist() == [False, False, False, False, True]


def test_the_first_group_listing_a_node_claims_it() -> None:
    g = chain(3)
    g.nodes.append(node("ga", "Block", children_ids=["n1"]))
    g.nodes.append(node("gb", "Block", children_ids=["n1", "n2"]))
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, 3, 4, -1, -1]


def test_a_parent_id_naming_no_node_falls_back_to_children_ids() -> None:
    g = chain(3)
    g.nodes.append(node("grp", "Block", children_ids=["n1"]))
    g.nodes[1].metadata["parent_id"] = "ghost"
    g.nodes[2].metadata["parent_id"] = "ghost"
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, 3, -1, -1]


def test_malformed_links_are_ignored() -> None:
    g = chain(3)
    g.nodes[0].metadata["children_ids"] = "n1"  # not a list
    g.nodes[1].metadata["children_ids"] = [7, None, "n1", "ghost"]  # not ids, or itself
    g.nodes[2].metadata["parent_id"] = "n2"  # itself
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, -1, -1]
    assert not h.is_group.any()


def test_nodes_on_a_hierarchy_cycle_are_top_level() -> None:
    g = chain(2)
    g.nodes.append(node("g1", "Block", children_ids=["g2"], parent_id="g2"))
    g.nodes.append(node("g2", "Block", children_ids=["g1"], parent_id="g1"))
    g.invalidate()
    h = Hierarchy(g)
    assert h.parent.tolist() == [-1, -1, -1, -1]
    assert h.depth.tolist() == [0, 0, 0, 0]
    assert h.in_cycle.tolist() == [False, False, True, True]
    assert not h.is_group.any()


def test_nodes_below_a_hierarchy_cycle_keep_their_parents() -> None:
    g = chain(3)
    g.nodes.append(node("g1", "Block", children_ids=["g2", "sub"], parent_id="g2"))  # 3
    g.nodes.append(node("g2", "Block", children_ids=["g1"], parent_id="g1"))  # 4
    g.nodes.append(node("sub", "Block", children_ids=["n1"], parent_id="g1"))  # 5
    g.nodes[1].metadata["parent_id"] = "sub"
    g.invalidate()
    h = Hierarchy(g)
    assert h.in_cycle.tolist() == [False, False, False, True, True, False]
    assert h.parent.tolist() == [-1, 5, -1, -1, -1, 3]
    assert h.depth.tolist() == [0, 2, 0, 0, 0, 1]
    assert ids(g, np.flatnonzero(h.is_group)) == ["g1", "sub"]
    assert ids(g, h.ancestors(1)) == ["sub", "g1"]


def test_a_cycle_made_by_children_ids_alone() -> None:
    g = chain(2)
    g.nodes.append(node("g1", "Block", children_ids=["g2"]))
    g.nodes.append(node("g2", "Block", children_ids=["g1", "n0"]))
    g.invalidate()
    h = Hierarchy(g)
    assert h.in_cycle.tolist() == [False, False, True, True]
    assert h.parent.tolist() == [3, -1, -1, -1]


# -- visible graph: which nodes show -----------------------------------------------------------


def test_all_collapsed_shows_the_top_level() -> None:
    g = grouped()
    v = visible_graph(g)
    assert labels(g, v) == ["n0", "n3", "top", "x", "w", "t4"]
    assert v.num_items == 6
    # every member of 'top', however deep, is drawn as the 'top' box (item 2)
    assert v.item_of_node.tolist() == [0, 2, 2, 1, 2, 2]
    assert v.frames.tolist() == []
    assert v.frame_of_item.tolist() == [-1] * 6


def test_all_collapsed_edges_enter_and_leave_the_group() -> None:
    g = grouped()
    v = visible_graph(g, tensor_kinds=())
    assert labels(g, v) == ["n0", "n3", "top"]
    assert sorted(edges(g, v)) == [("n0", "top", "t1"), ("top", "n3", "t3")]


def test_expanding_one_group_shows_its_children_in_its_frame() -> None:
    g = grouped()
    p = positions(g)
    v = visible_graph(g, ["top"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n3", "blk"]
    assert v.item_of_node.tolist() == [0, 2, 2, 1, 2, -1]  # the open 'top' is a frame, no item
    assert v.frames.tolist() == [p["top"]]
    assert v.frame_of_item.tolist() == [-1, -1, p["top"]]
    assert sorted(edges(g, v)) == [("blk", "n3", "t3"), ("n0", "blk", "t1")]


def test_expanding_nested_groups_shows_the_leaves() -> None:
    g = grouped()
    p = positions(g)
    v = visible_graph(g, ["top", "blk"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n1", "n2", "n3"]
    assert v.item_of_node.tolist() == [0, 1, 2, 3, -1, -1]
    assert v.frames.tolist() == [p["blk"], p["top"]]
    assert v.frame_of_item.tolist() == [-1, p["blk"], p["blk"], -1]  # innermost frame
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("n1", "n2", "t2"), ("n2", "n3", "t3")]


def test_an_inner_group_expanded_inside_a_collapsed_one_stays_hidden() -> None:
    g = grouped()
    v = visible_graph(g, ["blk"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n3", "top"]
    assert v.item_of_node.tolist() == [0, 2, 2, 1, 2, 2]
    assert v.frames.tolist() == []


def test_expanded_ids_that_are_not_groups_change_nothing() -> None:
    g = grouped()
    v = visible_graph(g, ["n0", "ghost", "x"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n3", "top"]
    assert v.frames.tolist() == []


def test_edges_between_collapsed_groups_carry_the_crossing_tensor() -> None:
    g = two_groups()
    v = visible_graph(g, tensor_kinds=())
    assert labels(g, v) == ["ga", "gb"]
    assert edges(g, v) == [("ga", "gb", "t2")]


def test_no_self_edges_inside_a_collapsed_group() -> None:
    g = two_groups()
    v = visible_graph(g, tensor_kinds=())
    assert np.all(v.edge_src != v.edge_dst)
    assert "t1" not in [t for _, _, t in edges(g, v)]  # n0 -> n1 stays inside 'ga'
    assert "t3" not in [t for _, _, t in edges(g, v)]  # n2 -> n3 stays inside 'gb'


def test_duplicated_edges_are_removed() -> None:
    g = two_groups()
    g.nodes[3].inputs = [4, 3]  # n3 reads t2 as well: two leaf edges ga -> gb on t2
    g.nodes[1].inputs = [2, 0]  # n1 reads x as well: two leaf edges x -> ga
    g.invalidate()
    assert len(g.index.edge_src) == 4
    v = visible_graph(g, tensor_kinds=("input",))
    assert sorted(edges(g, v)) == [("ga", "gb", "t2"), ("x", "ga", "x")]


def test_one_visible_pair_keeps_one_edge_per_tensor() -> None:
    g = graph(
        [tensor("x", "input"), tensor("a"), tensor("b"), tensor("y", "output")],
        [
            node("n0", "Split", [0], [1, 2], parent_id="ga"),
            node("n1", "Add", [1, 2], [3], parent_id="gb"),
            node("ga", "Block", children_ids=["n0"]),
            node("gb", "Block", children_ids=["n1"]),
        ],
        [0],
        [3],
    )
    v = visible_graph(g, tensor_kinds=())
    assert edges(g, v) == [("ga", "gb", "a"), ("ga", "gb", "b")]


def test_a_collapsed_sibling_next_to_an_expanded_group() -> None:
    g = two_groups()
    p = positions(g)
    v = visible_graph(g, ["ga"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n1", "gb"]
    assert v.frames.tolist() == [p["ga"]]
    assert v.frame_of_item.tolist() == [p["ga"], p["ga"], -1]
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("n1", "gb", "t2")]


# -- visible graph: tensor items ---------------------------------------------------------------


def test_inputs_outputs_and_weights_get_items_by_default() -> None:
    g = chain(2)
    v = visible_graph(g)
    assert labels(g, v) == ["n0", "n1", "x", "w", "t2"]
    assert v.tensor_items.tolist() == [0, 1, 3]
    assert sorted(edges(g, v)) == [
        ("n0", "n1", "t1"),
        ("n1", "t2", "t2"),  # an output hangs off its producer
        ("w", "n0", "w"),  # a tensor without producer feeds its consumers
        ("x", "n0", "x"),
    ]


def test_tensor_kinds_choose_which_tensors_get_items() -> None:
    g = chain(2)
    v = visible_graph(g, tensor_kinds=("input", "output"))  # weights folded into consumers
    assert labels(g, v) == ["n0", "n1", "x", "t2"]
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("n1", "t2", "t2"), ("x", "n0", "x")]
    v = visible_graph(g, tensor_kinds=("weight",))
    assert labels(g, v) == ["n0", "n1", "w"]
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("w", "n0", "w")]
    v = visible_graph(g, tensor_kinds=())
    assert labels(g, v) == ["n0", "n1"]
    assert v.tensor_items.dtype == np.int64


def test_an_activation_item_hangs_off_its_producer_and_its_consumers_keep_the_direct_edge() -> None:
    g = chain(2)
    v = visible_graph(g, tensor_kinds=("activation",))
    assert labels(g, v) == ["n0", "n1", "t1"]
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("n0", "t1", "t1")]


def test_an_output_read_by_another_node_keeps_the_direct_edge() -> None:
    g = chain(2)
    g.tensors[2].kind = "output"  # t1 is an output that n1 also reads
    g.outputs.append(2)
    v = visible_graph(g, tensor_kinds=("output",))
    assert labels(g, v) == ["n0", "n1", "t1", "t2"]
    assert sorted(edges(g, v)) == [("n0", "n1", "t1"), ("n0", "t1", "t1"), ("n1", "t2", "t2")]


def test_tensor_items_connect_to_the_collapsed_group_hiding_their_node() -> None:
    g = grouped()
    g.tensors.append(tensor("w2", "weight"))  # 6, read by n2 inside 'blk'
    g.nodes[2].inputs = [3, 6]
    g.invalidate()
    v = visible_graph(g)
    assert labels(g, v) == ["n0", "n3", "top", "x", "w", "t4", "w2"]
    assert ("w2", "top", "w2") in edges(g, v)
    assert v.frame_of_item.tolist() == [-1] * 7


def test_a_weight_sits_in_the_frame_of_its_first_consumer() -> None:
    g = grouped()
    p = positions(g)
    g.tensors.append(tensor("w2", "weight"))  # 6, read by n2 (in blk) and n3 (top level)
    g.nodes[2].inputs = [3, 6]
    g.nodes[3].inputs = [4, 6]
    g.tensors.append(tensor("x2", "input"))  # 7, read inside blk too, but inputs stay outside
    g.nodes[1].inputs = [2, 7]
    g.invalidate()
    v = visible_graph(g, ["top", "blk"])
    lab = labels(g, v)
    frame = dict(zip(lab, v.frame_of_item.tolist(), strict=True))
    assert frame["w2"] == p["blk"]
    assert frame["x2"] == -1 and frame["x"] == -1 and frame["w"] == -1 and frame["t4"] == -1
    assert frame["n1"] == p["blk"] and frame["n0"] == -1
    v = visible_graph(g, ["top"])  # n2 hidden in the collapsed 'blk', which sits in 'top'
    frame = dict(zip(labels(g, v), v.frame_of_item.tolist(), strict=True))
    assert frame["w2"] == p["top"] and frame["blk"] == p["top"]
    assert ("w2", "blk", "w2") in edges(g, v) and ("w2", "n3", "w2") in edges(g, v)


def test_a_group_with_its_own_inputs_and_outputs_keeps_its_box_when_expanded() -> None:
    # An If node whose 'then' body is one node: the If is both operator and container.
    g = graph(
        [tensor("c", "input"), tensor("y", "output"), tensor("b")],
        [
            node("if", "If", [0], [1], children_ids=["body"]),
            node("body", "Constant", [], [2], parent_id="if"),
        ],
        [0],
        [1],
    )
    v = visible_graph(g, tensor_kinds=())
    assert labels(g, v) == ["if"]
    assert v.item_of_node.tolist() == [0, 0]
    v = visible_graph(g, ["if"], tensor_kinds=())
    assert labels(g, v) == ["if", "body"]
    assert v.item_of_node.tolist() == [0, 1]
    assert v.frames.tolist() == [0]
    assert v.frame_of_item.tolist() == [-1, 0]


def test_a_hierarchy_cycle_does_not_break_the_visible_graph() -> None:
    g = chain(2)
    g.nodes.append(node("g1", "Block", children_ids=["g2"], parent_id="g2"))
    g.nodes.append(node("g2", "Block", children_ids=["g1"], parent_id="g1"))
    g.invalidate()
    v = visible_graph(g, ["g1", "g2"], tensor_kinds=())
    assert labels(g, v) == ["n0", "n1", "g1", "g2"]
    assert v.frames.tolist() == []
    assert edges(g, v) == [("n0", "n1", "t1")]


def test_an_empty_graph_has_an_empty_visible_graph() -> None:
    v = visible_graph(graph([], []))
    assert v.num_items == 0
    assert v.edge_src.tolist() == [] and v.frames.tolist() == []


def test_the_hierarchy_of_a_graph_is_made_once_per_state() -> None:
    g = two_groups()
    h = Hierarchy.of(g)
    assert Hierarchy.of(g) is h
    assert np.array_equal(h.parent, Hierarchy(g).parent)
    g.nodes[0].metadata.pop("parent_id", None)  # an edit: its steps invalidate the graph
    for nd in g.nodes:
        kids = nd.metadata.get("children_ids")
        if isinstance(kids, list) and g.nodes[0].id in kids:
            kids.remove(g.nodes[0].id)
    g.invalidate()
    fresh = Hierarchy.of(g)
    assert fresh is not h and fresh.parent[0] == -1 and h.parent[0] != -1


def _cached() -> Graph:
    """grouped() with a cache input read by n2 and a cache output written by n1, both owned
    by group 'blk' (``parent_id``, as an LLM layer owns its KV cache)."""
    g = grouped()
    g.tensors.append(tensor("past", "input", parent_id="blk"))
    g.tensors.append(tensor("present", "output", parent_id="blk"))
    past, present = len(g.tensors) - 2, len(g.tensors) - 1
    g.nodes[2].inputs.append(past)
    g.nodes[1].outputs.append(present)
    g.inputs.append(past)
    g.outputs.append(present)
    g.invalidate()
    return g


def test_inputs_and_outputs_a_group_owns_show_only_in_its_open_frame() -> None:
    g = _cached()
    at = positions(g)
    closed = visible_graph(g, {"top"})
    assert "past" not in labels(g, closed) and "present" not in labels(g, closed)
    assert "x" in labels(g, closed)  # the graph's own input stays
    opened = visible_graph(g, {"top", "blk"})
    names = labels(g, opened)
    frames = dict(zip(names, opened.frame_of_item.tolist(), strict=True))
    assert frames["past"] == at["blk"] and frames["present"] == at["blk"]
    assert frames["x"] == -1
    assert ("past", "n2", "past") in edges(g, opened)


def test_an_owner_that_does_not_hold_every_reader_is_not_one() -> None:
    g = _cached()
    g.nodes[0].inputs.append(len(g.tensors) - 2)  # n0, outside 'blk', reads the cache too
    g.invalidate()
    v = visible_graph(g, {"top"})
    names = labels(g, v)
    assert "past" in names and v.frame_of_item[names.index("past")] == -1
    assert "present" not in names
