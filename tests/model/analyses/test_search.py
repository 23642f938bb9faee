"""Search over nodes and tensors: fields, plain text and regex, the cap, bad patterns."""

from __future__ import annotations

import pytest

from tests.model.conftest import chain, grouped, node, tensor
from xocview.errors import XocviewError
from xocview.model.analyses.search import SearchError, search


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
