"""Hostile nesting (issue 28): scope paths of 50,000 parts and groups nested 5,000 deep cost
memory and time linear in the file, and groups past ``MAX_GROUP_DEPTH`` are shown flattened;
dotted keys and metadata of any depth are walked without recursion, expanded and edited only
up to ``MAX_METADATA_DEPTH``."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from tests.model.conftest import chain, node
from xocview.errors import EditError
from xocview.model import Graph, Hierarchy, Node, validate, visible_graph
from xocview.model.dotted import (
    MAX_METADATA_DEPTH,
    expand_dotted,
    expand_dotted_if_possible,
    flatten_dotted,
    has_dotted_keys,
    nesting,
)
from xocview.model.edits.lookup import check_json, key_parts, set_path
from xocview.model.hierarchy import MAX_GROUP_DEPTH
from xocview.model.scopes import add_named_scope_groups, add_scope_groups
from xocview.model.sections import add_section_groups, without_sections


def peak_mb(work: Callable[[], Any]) -> tuple[Any, float, float]:
    """What ``work`` returns, the most memory it held at once (MB) and its seconds (a second
    run, without tracemalloc, which slows every allocation)."""
    tracemalloc.start()
    try:
        work()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    start = time.perf_counter()
    out = work()
    return out, peak / 1e6, time.perf_counter() - start


def nested_chain(depth: int, leaves_per_level: int = 0) -> Graph:
    """chain(1) whose node sits in group g{depth-1}, inside g{depth-2}, ... inside g0; each
    group holds ``leaves_per_level`` more leaves. Written on both sides (parent_id and
    children_ids) as a file would."""
    g = chain(1)
    leaf = g.nodes[0]
    groups = [node(f"g{i}", "Group", children_ids=[]) for i in range(depth)]
    extra: list[Node] = []
    for i, grp in enumerate(groups):
        if i:
            grp.metadata["parent_id"] = f"g{i - 1}"
            groups[i - 1].metadata["children_ids"].append(grp.id)
        for k in range(leaves_per_level):
            extra.append(node(f"l{i}_{k}", "Relu", parent_id=grp.id))
            grp.metadata["children_ids"].append(f"l{i}_{k}")
    leaf.metadata["parent_id"] = groups[-1].id
    groups[-1].metadata["children_ids"].append(leaf.id)
    g.nodes.extend(groups + extra)
    g.invalidate()
    return g


# -- scope groups ------------------------------------------------------------------------------


def test_one_node_with_50000_scope_parts_costs_linear_memory() -> None:
    # Before: every enclosing scope's path was built, 50,000 prefixes of up to 100 KB (2.5 GB).
    prefix = "/" + "/".join(["a"] * 50_000)

    def grouped() -> Graph:
        g = Graph("g", "g", nodes=[Node("r", "Relu", [], [], {}, {})])
        assert add_named_scope_groups(g, {prefix: [0]}) == 0  # single members make no group
        return g

    g, peak, seconds = peak_mb(grouped)
    assert peak < 50, f"{peak:.0f} MB"
    assert seconds < 10
    assert len(g.nodes) == 1 and "parent_id" not in g.nodes[0].metadata


def test_scopes_deeper_than_the_limit_gather_at_the_limit() -> None:
    deep = tuple(f"s{k}" for k in range(MAX_GROUP_DEPTH + 50))
    names = ["a", "b", "c"]
    g = Graph("g", "g", nodes=[Node(n, "Relu", [], [], {}, {}) for n in names])
    # a and b share the whole deep scope; c stops 10 levels short of the limit.
    added = add_scope_groups(g, [deep, deep, deep[: MAX_GROUP_DEPTH - 10]])
    h = Hierarchy(g)
    assert h.max_depth <= MAX_GROUP_DEPTH
    assert added == 2  # the scope at the limit (a, b) and the one holding c and it
    cut = "/" + "/".join(deep[:MAX_GROUP_DEPTH])
    assert g.nodes[0].metadata["parent_id"] == cut
    assert g.nodes[1].metadata["parent_id"] == cut
    groups = {nd.id: nd.metadata for nd in g.nodes if nd.op_type == "Scope"}
    assert groups[cut]["children_ids"] == ["a", "b"]
    assert groups[cut]["name"] == f"s{MAX_GROUP_DEPTH - 1}"
    assert not h.flattened.any()


def test_a_member_at_every_level_of_a_deep_scope_stays_linear() -> None:
    # Node k is scoped k + 1 levels deep: every scope holds a node and a scope, so each is kept
    # up to the limit; the names themselves are what grows, not the work per name.
    depth = 3_000
    names = ["/" + "/".join(["p"] * (k + 1)) + "/Op" for k in range(depth)]
    by_prefix = {n.rpartition("/")[0]: [k] for k, n in enumerate(names)}
    size = sum(map(len, names)) / 1e6

    def grouped() -> Graph:
        g = Graph("g", "g", nodes=[Node(n, "Relu", [], [], {}, {}) for n in names])
        assert add_named_scope_groups(g, by_prefix) == MAX_GROUP_DEPTH
        return g

    g, peak, seconds = peak_mb(grouped)
    assert peak < 20 + 4 * size, f"{peak:.0f} MB for {size:.0f} MB of names"
    assert seconds < 10
    assert Hierarchy(g).max_depth == MAX_GROUP_DEPTH


# -- groups nested deep ------------------------------------------------------------------------


def test_groups_nested_5000_deep_are_flattened_past_the_limit() -> None:
    g = nested_chain(5_000)
    h, peak, seconds = peak_mb(lambda: Hierarchy(g))
    assert seconds < 5 and peak < 50
    assert h.nesting == 5_000
    assert h.max_depth == MAX_GROUP_DEPTH
    pos = {nd.id: i for i, nd in enumerate(g.nodes)}
    limit = pos[f"g{MAX_GROUP_DEPTH - 1}"]
    # g0 .. g63 keep their parents; g64 and everything below now sit in g63.
    assert h.parent[pos["g1"]] == pos["g0"]
    assert h.parent[pos[f"g{MAX_GROUP_DEPTH}"]] == limit
    assert h.parent[pos["g4999"]] == limit and h.parent[pos["n0"]] == limit
    assert h.flattened.sum() == 5_000 - MAX_GROUP_DEPTH
    assert not h.flattened[pos[f"g{MAX_GROUP_DEPTH}"]]
    assert h.flattened[pos[f"g{MAX_GROUP_DEPTH + 1}"]]
    assert int(h.is_group.sum()) == MAX_GROUP_DEPTH
    assert h.child_count[limit] == 5_000 - MAX_GROUP_DEPTH + 1


def test_everything_expanded_draws_at_most_the_limit_of_frames() -> None:
    g = nested_chain(5_000)
    every = [nd.id for nd in g.nodes if nd.op_type == "Group"]
    v, _, seconds = peak_mb(lambda: visible_graph(g, every))
    assert seconds < 5
    assert len(v.frames) == MAX_GROUP_DEPTH
    assert len(v.node_items) == 5_000 - MAX_GROUP_DEPTH + 1  # the flattened groups and n0


def test_a_deep_hierarchy_costs_time_linear_in_its_nodes() -> None:
    # 20,000 levels of a group and two leaves: 60,000 nodes. Level by level over every node
    # (as before) was 20,000 x 60,000 steps.
    g = nested_chain(20_000, leaves_per_level=2)
    h, peak, seconds = peak_mb(lambda: Hierarchy(g))
    assert seconds < 10, f"{seconds:.1f} s"
    assert peak < 100
    assert h.nesting == 20_000 and h.max_depth == MAX_GROUP_DEPTH


def test_a_long_tail_below_a_hierarchy_cycle_is_found_quickly() -> None:
    # a <-> b is a cycle; a chain of 30,000 groups hangs below it. Peeling the tail a level
    # per round over every node was quadratic.
    g = Graph("g", "g")
    n = 30_000
    g.nodes = [node("a", "G", parent_id="b"), node("b", "G", parent_id="a")]
    g.nodes += [node(f"t{k}", "G", parent_id="a" if k == 0 else f"t{k - 1}") for k in range(n)]
    g.invalidate()
    h, _, seconds = peak_mb(lambda: Hierarchy(g))
    assert seconds < 5
    assert h.in_cycle.tolist() == [True, True] + [False] * n
    assert h.parent[0] == -1 and h.parent[1] == -1 and h.parent[2] == 0
    assert h.nesting == n  # t29999 is n levels below a, now top-level
    assert h.max_depth == MAX_GROUP_DEPTH


def test_check_notes_the_flattening_once_where_it_starts() -> None:
    g = nested_chain(200)
    notes = [f for f in validate(g) if "nested" in f.message]
    pos = {nd.id: i for i, nd in enumerate(g.nodes)}
    first = pos[f"g{MAX_GROUP_DEPTH + 1}"]
    assert [str(f) for f in notes] == [
        f"nodes[{first}].metadata.parent_id: warning: groups nested 200 deep; levels past "
        f"{MAX_GROUP_DEPTH} are shown flattened into group 'g{MAX_GROUP_DEPTH - 1}'"
    ]
    assert not [f for f in validate(nested_chain(MAX_GROUP_DEPTH)) if "nested" in f.message]


def test_sections_leave_flattened_nodes_where_the_file_put_them() -> None:
    # 600 groups nested: the level that takes the flattened ones has 537 boxes, more than a
    # level draws before sections split it. A section would re-parent them on saving.
    g = nested_chain(600)
    before = [dict(nd.metadata) for nd in g.nodes]
    add_section_groups(g)
    saved = without_sections(g)
    assert [nd.metadata for nd in saved.nodes] == before


# -- dotted keys and deep metadata -------------------------------------------------------------


def deep_dict(depth: int) -> dict[str, Any]:
    """{"a": {"a": ... {"a.b": 1}}} ``depth`` levels deep, built without recursion."""
    inner: dict[str, Any] = {"a.b": 1}
    for _ in range(depth - 1):
        inner = {"a": inner}
    return inner


def test_a_key_of_2000_dotted_parts_is_kept_whole() -> None:
    key = ".".join(["a"] * 2_000)
    kept: list[str] = []
    out = expand_dotted({"x": {key: 1, "p.q": 2}}, kept)
    assert out == {"x": {key: 1, "p": {"q": 2}}}
    assert kept == [f"x.{key}"]
    assert nesting(out) <= MAX_METADATA_DEPTH


def test_a_key_that_fits_only_higher_up_is_kept_whole_below() -> None:
    key = ".".join(["b"] * 100)
    assert nesting(expand_dotted({key: 1})) == 100
    out = expand_dotted({"a": {key: deep_dict(95)}})  # 1 + 100 + 95 levels: too deep
    assert key in out["a"]
    assert nesting(out) == 1 + 1 + 96  # the kept key's value is expanded on its own


def test_the_walkers_take_any_depth_without_recursion() -> None:
    deep = deep_dict(50_000)
    assert has_dotted_keys(deep)
    assert nesting(expand_dotted(deep)) == 50_000  # "a.b" at the bottom is kept whole
    assert expand_dotted_if_possible(deep) is not deep
    flat = flatten_dotted(deep)
    assert list(flat.values()) == [1] and len(next(iter(flat))) == 2 * 50_000 + 1


def test_dicts_meeting_at_one_place_merge_up_to_the_limit() -> None:
    out = expand_dotted({"a.b": deep_dict(150), "a": {"b": {"c": 1}}})
    assert out["a"]["b"]["c"] == 1 and "a" in out["a"]["b"]
    assert nesting(out) == 2 + 151


def test_edits_refuse_keys_and_values_past_the_limit() -> None:
    key = ".".join(["a"] * 2_000)
    with pytest.raises(EditError, match="has 2,000 dotted parts; metadata nests at most"):
        key_parts(key)
    parts = key_parts(".".join(["a"] * 150))
    with pytest.raises(EditError, match="would nest 251 levels deep under 'a'"):
        set_path({}, parts, deep_dict(100), "node 'n' metadata")
    assert nesting(set_path({}, parts, deep_dict(40), "node 'n' metadata")) == 191
    value: Any = 1
    for _ in range(10_000):
        value = [value]
    with pytest.raises(EditError, match=r"^v\[0\]\[0\]\[0\].*nested more than 192 levels"):
        check_json(value, "v")
