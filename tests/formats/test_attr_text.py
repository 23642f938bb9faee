"""xocview/formats/attr_text.py: NNVM attribute strings as values, safely."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xocview.formats.attr_text import MAX_DEPTH, parse, parse_attrs


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("(1, 1)", [1, 1]),
        ("(3,3)", [3, 3]),
        ("[3, 3]", [3, 3]),
        ("(8L,)", [8]),  # a Python 2 long in a one-element tuple (old __shape__ values)
        ("(8L, 3L, 3L, 3L)", [8, 3, 3, 3]),
        ("(-1, 256, 1, 1)", [-1, 256, 1, 1]),
        ("()", []),
        ("((1, 2), (3, 4))", [[1, 2], [3, 4]]),
        ("(None, 2)", [None, 2]),
        ("('NCHW', 'it\\'s')", ["NCHW", "it's"]),
        ("True", True),
        ("False", False),
        ("true", True),
        ("None", None),
        ("64", 64),
        ("-1", -1),
        ("1e-05", 1e-05),
        ("0.0078125", 0.0078125),
        ("127.5", 127.5),
        ("  5 ", 5),
        ("relu", "relu"),
        ("NCHW", "NCHW"),
        ("null", "null"),  # an MXNet enum value, not JSON null, at the top level
        ('["zero", {}]', ["zero", {}]),
        ('["Constant", {"value": 0.25}]', ["Constant", {"value": 0.25}]),
        ('["normal", {"sigma": 0.01}]', ["normal", {"sigma": 0.01}]),
        ('{"a": null, "b": [true, "x\\"y"]}', {"a": None, "b": [True, 'x"y']}),
        ("{'a': (1, 2)}", {"a": [1, 2]}),  # Python's str() of a dict
    ],
)
def test_recognised_forms_become_values(text: str, value: Any) -> None:
    got = parse(text)
    assert got == value
    assert type(got) is type(value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ones",
        "(1, 2",  # unclosed
        "(1, 2]",  # mismatched
        "(a, b)",  # bare words are not values inside brackets
        "[1, 2] extra",
        "{1: 2}",  # mapping keys must be strings
        '["\\q"]',  # a bad JSON escape
        "__import__('os').system('true')",
        "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5),
        "inf",
        "nan",
    ],
)
def test_anything_else_stays_the_text_itself(text: str) -> None:
    assert parse(text) == text


def test_nesting_up_to_the_limit_parses() -> None:
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    value = parse(text)
    depth = 0
    while isinstance(value, list) and value:
        value = value[0]
        depth += 1
    assert depth == MAX_DEPTH - 1


def test_parse_attrs_parses_strings_and_keeps_other_scalars() -> None:
    assert parse_attrs({"kernel": "(3, 3)", "n": 4, "flag": True, "mode": "channel"}) == {
        "kernel": [3, 3],
        "n": 4,
        "flag": True,
        "mode": "channel",
    }


@given(st.text(max_size=60))
def test_parse_never_fails_on_any_text(text: str) -> None:
    parse(text)


@given(
    st.recursive(
        st.integers(-(10**9), 10**9) | st.booleans() | st.none(),
        lambda inner: st.lists(inner, max_size=4),
        max_leaves=20,
    )
)
def test_python_tuple_text_reads_back_as_lists(value: Any) -> None:
    """What MXNet's Python front end writes with str() of a tuple comes back as data."""
    assert parse(str(_as_tuples(value))) == value


def _as_tuples(value: Any) -> Any:
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list) else value
