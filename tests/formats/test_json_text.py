"""xocview/formats/json_text.py: JSON nested at most MAX_DEPTH deep, measured without recursion."""

from __future__ import annotations

import json
import random
import time
import tracemalloc
from typing import Any

import pytest

import xocview.formats.json_text as jt
from xocview.formats.json_text import MAX_DEPTH, JsonTooDeep, loads
from xocview.formats.onnx import sidecar

BS = "\\"


def brute_depth(text: str) -> int:
    """The nesting of JSON text, one character at a time."""
    depth = deepest = 0
    inside = escaped = False
    for ch in text:
        if inside:
            if escaped:
                escaped = False
            elif ch == BS:
                escaped = True
            elif ch == '"':
                inside = False
        elif ch == '"':
            inside = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


WORDS = ["a", 'b"', BS, "[{", '}]"' + BS + '"', 'x"[', BS * 9 + '"{', BS * 8, '"]]]', "é[ü"]


def value(rng: random.Random, depth: int) -> Any:
    r = rng.random()
    if depth and r < 0.4:
        return [value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    if depth and r < 0.7:
        return {rng.choice(WORDS): value(rng, depth - 1) for _ in range(rng.randint(0, 3))}
    return rng.choice([*WORDS, 1, None])


def test_the_scan_measures_what_a_parser_would(monkeypatch: pytest.MonkeyPatch) -> None:
    # Quotes after runs of backslashes, brackets inside strings, chunk edges anywhere.
    rng = random.Random(28)
    monkeypatch.setattr(jt, "MAX_DEPTH", 0)  # report every depth
    for _ in range(500):
        text = json.dumps(value(rng, rng.randint(0, 10)), ensure_ascii=rng.random() < 0.5)
        monkeypatch.setattr(jt, "_CHUNK", rng.choice([1, 2, 3, 7, 64, 1 << 20]))
        found = jt._scan(text.encode())
        assert (0 if found is None else found[0]) == brute_depth(text), text


def test_the_limit_is_exact() -> None:
    assert loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(JsonTooDeep) as info:
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert (info.value.depth, info.value.line, info.value.column) == (MAX_DEPTH + 1, 1, 201)
    assert info.value.place == "[0][0][0][0][0]…"


def test_brackets_in_strings_do_not_count() -> None:
    text = json.dumps({"s": "[" * 5000 + '\\"{' * 100})
    assert loads(text) == json.loads(text)


def test_a_deep_value_is_located_by_its_path() -> None:
    d = 100_000
    text = '{"a": [1, {"b": ' + "[" * d + "]" * d + '}], "c": ' + "[" * 300 + "]" * 300 + "}"
    with pytest.raises(JsonTooDeep) as info:
        loads(text)
    assert info.value.place == "a[1].b[0][0]…"
    assert info.value.depth == d + 3
    assert str(info.value).startswith(f"a[1].b[0][0]…: nested {d + 3:,} deep; at most")


def test_an_unclosed_document_is_located_by_line_and_column() -> None:
    with pytest.raises(JsonTooDeep) as info:
        loads('{"a":\n' + "[" * 1000)
    assert (info.value.place, info.value.line, info.value.column) == ("", 2, 200)


def test_a_big_flat_document_is_scanned_in_bounded_memory() -> None:
    text = json.dumps([{"id": f"n{i}", "s": 'q"' + BS, "v": [1, 2]} for i in range(100_000)])
    data = text.encode()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        assert jt._scan(data) is None
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert peak < 60, f"{peak:.0f} MB for {len(data) / 1e6:.0f} MB"
    assert seconds < 20


def test_an_onnx_metadata_entry_nested_100000_deep_stays_plain_text() -> None:
    # Was: RecursionError out of json.loads, an internal error in every command.
    d = 100_000
    assert sidecar.parse('{"nodes": {"n": {"k": ' + "[" * d + "]" * d + "}}}") is None
    assert sidecar.parse('{"nodes": {"n": {"k": [[1]]}}}') == {"nodes": {"n": {"k": [[1]]}}}
