"""xocview/model/dotted.py: expanding and flattening dotted keys."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xocview.model.dotted import (
    DottedKeyConflict,
    expand_dotted,
    flatten_dotted,
    has_dotted_keys,
)

# -- expand ------------------------------------------------------------------------------------


def test_a_dotted_key_becomes_nested_levels() -> None:
    assert expand_dotted({"perf.time.cpu": 12.5}) == {"perf": {"time": {"cpu": 12.5}}}


def test_keys_sharing_a_prefix_share_one_dict() -> None:
    out = expand_dotted({"perf.time.cpu": 1, "perf.time.gpu": 2, "perf.mem": 3})
    assert out == {"perf": {"time": {"cpu": 1, "gpu": 2}, "mem": 3}}


def test_plain_keys_and_values_pass_through() -> None:
    value = [1, {"a.b": 2}]  # dicts inside lists are values, not levels
    out = expand_dotted({"name": "conv", "n": None, "list": value})
    assert out == {"name": "conv", "n": None, "list": [1, {"a.b": 2}]}


def test_nested_dicts_are_expanded_at_every_depth() -> None:
    assert expand_dotted({"a": {"b.c": {"d.e": 1}}}) == {"a": {"b": {"c": {"d": {"e": 1}}}}}


def test_a_dotted_key_merges_into_a_nested_dict_written_plainly() -> None:
    assert expand_dotted({"a": {"b": 1}, "a.c": 2}) == {"a": {"b": 1, "c": 2}}
    assert expand_dotted({"a.c": 2, "a": {"b": 1}}) == {"a": {"c": 2, "b": 1}}


def test_two_nested_dicts_for_one_key_merge_deeply() -> None:
    out = expand_dotted({"a.b": {"c": 1}, "a": {"b": {"d": 2}}})
    assert out == {"a": {"b": {"c": 1, "d": 2}}}


@pytest.mark.parametrize("key", ["a..b", ".a", "a.", "."])
def test_keys_with_empty_parts_are_kept_whole(key: str) -> None:
    assert expand_dotted({key: 1}) == {key: 1}


def test_order_of_first_appearance_is_kept_at_every_level() -> None:
    out = expand_dotted({"z.y": 1, "b": 2, "z.a": 3, "a": 4, "z.m.q": 5})
    assert list(out) == ["z", "b", "a"]
    assert list(out["z"]) == ["y", "a", "m"]


def test_the_input_is_left_unchanged() -> None:
    inner = {"b.c": 1}
    mapping: dict[str, Any] = {"a": inner, "x.y": 2}
    expand_dotted(mapping)
    assert mapping == {"a": {"b.c": 1}, "x.y": 2}
    assert inner == {"b.c": 1}


def test_the_result_does_not_share_dicts_with_the_input() -> None:
    inner = {"b": 1}
    out = expand_dotted({"a": inner, "a.c": 2})
    assert inner == {"b": 1}  # the merge went into a copy
    assert out["a"] is not inner


# -- conflicts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mapping", "key", "path"),
    [
        ({"a": 1, "a.b": 2}, "a.b", "a"),  # a leaf where a level is needed
        ({"a.b": 2, "a": 1}, "a", "a"),  # a leaf over a level
        ({"a.b": 1, "a.b.c": 2}, "a.b.c", "a.b"),
        ({"a.b": 1, "a": {"b": 2}}, "a", "a.b"),  # two leaves, found while merging
        ({"x.a.b": 1, "x": {"a": {"b": {"c": 2}}}}, "x", "x.a.b"),  # deeper inside a merge
        ({"a": {"b": {"c": 1}}, "a.b": {"c": 2}}, "a.b", "a.b.c"),
    ],
)
def test_a_conflict_names_the_key_and_the_full_place_taken(
    mapping: dict[str, Any], key: str, path: str
) -> None:
    with pytest.raises(DottedKeyConflict) as info:
        expand_dotted(mapping)
    assert (info.value.key, info.value.path) == (key, path)
    assert str(info.value) == f"key '{key}' conflicts with the value already at '{path}'"


def test_a_conflict_deep_inside_reports_the_place_within_its_own_dict() -> None:
    with pytest.raises(DottedKeyConflict) as info:
        expand_dotted({"outer": {"a": 1, "a.b": 2}})
    assert (info.value.key, info.value.path) == ("a.b", "a")


def test_a_conflict_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="conflicts"):
        expand_dotted({"a": 1, "a.b": 2})


# -- has_dotted_keys ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({}, False),
        ({"a": 1, "b": {"c": {}}}, False),
        ({"a.b": 1}, True),
        ({"a": {"b": {"c.d": 1}}}, True),
        ({"a": [{"b.c": 1}]}, False),  # inside a list is a value, not a key
        ({"a": "x.y"}, False),  # a dot in a value does not count
    ],
)
def test_has_dotted_keys(mapping: dict[str, Any], expected: bool) -> None:
    assert has_dotted_keys(mapping) is expected


# -- flatten -----------------------------------------------------------------------------------


def test_flatten_gives_the_leaves_under_dotted_paths_in_order() -> None:
    nested = {"perf": {"time": {"cpu": 1.5, "gpu": 2}}, "level": 3, "tags": ["a", "b"]}
    flat = flatten_dotted(nested)
    assert flat == {"perf.time.cpu": 1.5, "perf.time.gpu": 2, "level": 3, "tags": ["a", "b"]}
    assert list(flat) == ["perf.time.cpu", "perf.time.gpu", "level", "tags"]


def test_flatten_keeps_an_empty_dict_as_a_leaf() -> None:
    assert flatten_dotted({"a": {}, "b": {"c": {}}}) == {"a": {}, "b.c": {}}


def test_flatten_with_a_prefix() -> None:
    assert flatten_dotted({"a": {"b": 1}}, "root") == {"root.a.b": 1}


def test_flatten_does_not_merge_an_empty_key_with_the_top_level() -> None:
    flat = flatten_dotted({"": {"x": 1}, "x": 2})
    assert flat == {".x": 1, "x": 2}


def test_flatten_then_expand_gives_back_the_nested_dict() -> None:
    nested = {"perf": {"time": {"cpu": 1.5}, "mem": {}}, "level": 3, "x": {"y": [1, {"z": 2}]}}
    assert expand_dotted(flatten_dotted(nested)) == nested


# -- properties --------------------------------------------------------------------------------

# Keys that name one level each: non-empty and dot-free (a dotted or empty key cannot survive
# flattening, which is why loaders expand only real paths).
_keys = st.text(alphabet="abcxyz_0", min_size=1, max_size=4)
_leaves = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4))
_nested: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(_keys, _leaves, max_size=3),
    lambda inner: st.dictionaries(_keys, st.one_of(_leaves, inner), max_size=3),
    max_leaves=12,
)


@given(_nested)
def test_property_flatten_then_expand_round_trips(nested: dict[str, Any]) -> None:
    flat = flatten_dotted(nested)
    assert all(not isinstance(v, dict) or v == {} for v in flat.values())
    back = expand_dotted(flat)
    assert back == nested
    assert _key_order(back) == _key_order(nested)


@given(_nested)
def test_property_expanding_a_nested_dict_without_dots_changes_nothing(
    nested: dict[str, Any],
) -> None:
    assert not has_dotted_keys(nested)
    assert expand_dotted(nested) == nested


@given(_nested)
def test_property_expand_is_idempotent(nested: dict[str, Any]) -> None:
    once = expand_dotted(flatten_dotted(nested))
    assert not has_dotted_keys(once)
    assert expand_dotted(once) == once


def _key_order(d: Any) -> Any:
    """The keys of every level, in order (dict equality ignores order)."""
    if not isinstance(d, dict):
        return None
    return [(k, _key_order(v)) for k, v in d.items()]
