"""xocview/model/scopes.py: scope groups from ``/a/b/Op`` node names."""

from __future__ import annotations

import pytest

from xocview.model import Graph, Node
from xocview.model.scopes import add_named_scope_groups, add_scope_groups, scope_of

NAMES = [
    "/enc/l0/attn/MatMul",
    "/enc/l0/attn/Add",
    "/enc/l0/Add",
    "Relu_3",  # no scope
    "/enc/l0/norm/LayerNorm",  # single member: goes to /enc/l0
    "/enc/l1/attn/MatMul",
    "//enc//l1/attn/Add",  # the same scope spelled with empty parts
    "/Identity",  # an empty scope
    "/enc",  # a node whose id a group wants: the group becomes "/enc#scope"
    "/head/only/Identity",  # a chain of single members: no group at all
]


def named_graph(names: list[str]) -> Graph:
    return Graph("g", "g", nodes=[Node(n, "Op", [], [], {}, {"name": n}) for n in names])


def by_prefix(names: list[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if "/" in name:
            out.setdefault(name.rpartition("/")[0], []).append(i)
    return out


def groups_of(g: Graph) -> dict[str, dict[str, object]]:
    return {nd.id: nd.metadata for nd in g.nodes if nd.op_type == "Scope"}


def test_scope_of_drops_empty_parts() -> None:
    assert scope_of("/a/b/MatMul") == ("a", "b")
    assert scope_of("//a//b/MatMul") == ("a", "b")
    assert scope_of("/MatMul") == ()
    assert scope_of("MatMul") == ()


def test_groups_nest_skip_single_members_and_avoid_taken_ids() -> None:
    g = named_graph(NAMES)
    scopes = [scope_of(n) or None for n in NAMES]
    assert add_scope_groups(g, scopes) == 4
    groups = groups_of(g)
    assert list(groups) == ["/enc#scope", "/enc/l0", "/enc/l0/attn", "/enc/l1/attn"]
    assert groups["/enc/l0"]["children_ids"] == [
        "/enc/l0/Add",
        "/enc/l0/norm/LayerNorm",
        "/enc/l0/attn",
    ]
    assert groups["/enc/l1/attn"]["children_ids"] == ["/enc/l1/attn/MatMul", "//enc//l1/attn/Add"]
    # "/enc/l1" holds one scope only: its child group sits directly in "/enc".
    assert groups["/enc/l1/attn"]["parent_id"] == "/enc#scope"
    assert groups["/enc#scope"]["children_ids"] == ["/enc/l0", "/enc/l1/attn"]
    assert groups["/enc#scope"] == {
        "name": "enc",
        "scope": "/enc#scope",
        "derived": "scope",
        "children_ids": ["/enc/l0", "/enc/l1/attn"],
    }
    parents = {nd.id: nd.metadata.get("parent_id") for nd in g.nodes[: len(NAMES)]}
    assert parents["/enc/l0/norm/LayerNorm"] == "/enc/l0"
    assert parents["Relu_3"] is None and parents["/Identity"] is None
    assert parents["/head/only/Identity"] is None


def test_named_groups_equal_groups_from_scope_paths() -> None:
    a, b = named_graph(NAMES), named_graph(NAMES)
    assert add_scope_groups(a, [scope_of(n) or None for n in NAMES]) == 4
    assert add_named_scope_groups(b, by_prefix(NAMES)) == 4
    assert a == b


def test_one_scope_spelled_two_ways_keeps_node_order() -> None:
    names = ["/a/b/X", "a/b/Y", "/a/b/Z", "a//b/W"]
    g = named_graph(names)
    assert add_named_scope_groups(g, by_prefix(names)) == 1
    assert groups_of(g)["/a/b"]["children_ids"] == names


def test_nothing_to_group_adds_nothing() -> None:
    names = ["/a/X", "/b/Y", "Z"]
    g = named_graph(names)
    assert add_named_scope_groups(g, by_prefix(names)) == 0
    assert add_scope_groups(g, [scope_of(n) or None for n in names]) == 0
    assert len(g.nodes) == 3 and all("parent_id" not in nd.metadata for nd in g.nodes)


def test_scopes_must_match_the_nodes() -> None:
    with pytest.raises(ValueError, match="2 scopes for 3 nodes"):
        add_scope_groups(named_graph(["a", "b", "c"]), [None, None])
