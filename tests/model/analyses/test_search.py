"""Search over nodes and tensors: fields, plain text and regex, the cap, bad patterns."""

from __future__ import annotations

import pytest

from tests.model.conftest import chain, grouped, node, tensor
from xocview.errors import XocviewError
from xocview.model import Graph
from xocview.model.analyses.search import SearchError, SearchIndex, compile_query, search


def found(result) -> list[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return [(h.kind, h.id, h.where) for h in result.hits]


def test_plain_text_is_a_case_insensitive_substring_of_ids_and_op_types() -> None:
    g = chain(3)
    assert found(search(g, "RELU")) == [("node", "n1", "op type"), ("node", "n2", "op type")]
    assert found(search(g, "n2")) == [("node", "n2", "id")]
    assert found(search(g, "RELU", case_sensitive=True)) == []


def test_regex_matches_whole_ids_when_anchored() -> None:
    g = chain(3)
    assert found(search(g, r"^t(1|2)$", regex=True)) == [
        ("tensor", "t1", "id"),
        ("tensor", "t2", "id"),
    ]
    assert found(search(g, "^t.$")) == []  # plain text: the dot and anchors are literal


def test_shape_dtype_and_metadata_values_match() -> None:
    g = chain(2)
    g.tensors[0] = tensor("x", "input", (1, 3, 224, 224), doc="pixels")
    g.nodes[1].metadata["perf"] = {"time": {"cpu": 12.5}}
    g.invalidate()
    assert found(search(g, "1x3x224")) == [("tensor", "x", "shape")]
    assert [h.id for h in search(g, "float32").hits] == ["x", "w", "t1", "t2"]
    assert found(search(g, "pixels")) == [("tensor", "x", "metadata doc")]
    hit = search(g, "12.5").hits[0]
    assert (hit.id, hit.where, hit.text) == ("n1", "metadata perf.time.cpu", "12.5")


def test_hierarchy_links_do_not_make_groups_match_their_children() -> None:
    g = grouped()
    assert [h.id for h in search(g, "n1").hits] == ["n1"]
    assert [h.id for h in search(g, "blk").hits] == ["blk"]


def test_each_item_is_listed_once_with_its_first_matching_field() -> None:
    g = chain(1)
    g.nodes[0] = node("add", "Add", [0, 1], [2], note="add things")
    g.invalidate()
    assert found(search(g, "add")) == [("node", "add", "id")]


def test_results_are_capped() -> None:
    g = chain(30)
    result = search(g, "t", limit=10)
    assert len(result.hits) == 10 and result.truncated
    assert not search(g, "t", limit=100).truncated


def test_empty_query_matches_nothing() -> None:
    assert search(chain(2), "").hits == []


def test_invalid_regex_raises_a_search_error_that_says_how_to_fix() -> None:
    with pytest.raises(SearchError, match=r"regex '\(': .*untick Regex") as info:
        search(chain(2), "(", regex=True)
    assert isinstance(info.value, XocviewError)
    assert search(chain(2), "(").hits == []  # as plain text it is just a character


# -- attributes --------------------------------------------------------------------------------


def conv_graph() -> Graph:
    g = chain(3)
    g.nodes[0] = node(
        "c", "Conv", [0, 1], [2], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "group": 1}
    )
    g.nodes[2].attributes = {"axis": -1, "mode": "constant"}
    g.invalidate()
    return g


def test_attribute_names_match_and_the_hit_shows_the_value() -> None:
    g = conv_graph()
    assert found(search(g, "kernel_shape")) == [("node", "c", "attribute kernel_shape")]
    hit = search(g, "kernel_shape").hits[0]
    assert hit.text == "[3, 3]"  # as the inspector shows it
    assert found(search(g, "axis")) == [("node", "n2", "attribute axis")]
    assert search(g, "axis").hits[0].text == "-1"


def test_attribute_values_match_as_the_inspector_and_the_boxes_show_them() -> None:
    g = conv_graph()
    for query in ("3, 3", "[3, 3]", "3x3", "1, 1, 1, 1"):
        assert [h.id for h in search(g, query).hits] == ["c"], query
    hit = search(g, "1x1x1x1").hits[0]
    assert (hit.where, hit.text) == ("attribute pads", "[1, 1, 1, 1]")
    assert found(search(g, "constant")) == [("node", "n2", "attribute mode")]


def test_attributes_in_regex_mode() -> None:
    g = conv_graph()
    assert found(search(g, r"^kernel_\w+$", regex=True)) == [
        ("node", "c", "attribute kernel_shape")
    ]
    assert found(search(g, r"^\[3, 3\]$", regex=True)) == [("node", "c", "attribute kernel_shape")]
    assert found(search(g, r"^pads$", regex=True)) == [("node", "c", "attribute pads")]
    assert search(g, r"^3, 3$", regex=True).hits == []  # anchors hold at the field's ends


def test_nested_attribute_values_are_found_by_name_only() -> None:
    g = chain(1)
    g.nodes[0].attributes = {"value": {"tensor": {"dtype": "float32", "values": [0.5]}}}
    g.invalidate()
    hit = search(g, "value").hits[0]
    assert (hit.where, hit.text) == ("attribute value", "{1}")
    assert search(g, "0.5").hits == []


# -- the joined scan gives the field-by-field answer ---------------------------------------------


def field_by_field(g: Graph, query: str, regex: bool) -> list[tuple[str, str, str]]:
    """The answer of a plain loop over every field, first matching field per item."""
    idx = SearchIndex(g)
    f = idx._f
    match = compile_query(query, regex).search
    out: list[tuple[str, str, str]] = []
    seen: set[int] = set()
    for k, text in enumerate(f.texts):
        if f.owner[k] not in seen and match(text):
            seen.add(f.owner[k])
            kind, pos = f.items[f.owner[k]]
            item = g.nodes[pos] if kind == "node" else g.tensors[pos]
            out.append((kind, item.id, f.where[k]))
    return out


@pytest.mark.parametrize(
    ("query", "regex"),
    [
        (r"3\s+\w", True),  # could run from one field into the next
        (r"\]\n", True),
        (r"t\d$", True),
        (r"^n", True),
        (r"\An1\Z", True),  # looks past the field: the field-by-field loop
        (r"(?<=n)\d", True),
        (r"x*", True),  # empty matches: every item once
        ("1", False),
        ("\n", False),
    ],
)
def test_scan_equals_field_by_field(query: str, regex: bool) -> None:
    g = conv_graph()
    g.nodes[1].metadata["note"] = "line one\nline two 3"
    g.invalidate()
    assert found(search(g, query, regex=regex)) == field_by_field(g, query, regex)


def test_the_text_drawn_on_a_box_is_found_as_drawn() -> None:
    """A user types what the box says ("7x7 /2"), not the attribute it comes from."""
    from xocview.model.analyses.opfacts import key_attributes

    g = chain(3)
    g.nodes[0] = node("stem", "Conv", [0, 1], [2], {"kernel_shape": [7, 7], "strides": [2, 2]})
    g.invalidate()
    drawn = key_attributes(g.nodes[0])
    assert drawn.startswith("7x7 /2")
    hits = search(g, "7x7 /2").hits
    assert [(h.id, h.where, h.text) for h in hits] == [("stem", "box text", drawn)]
    assert search(g, "/3").hits == []
