"""Deterministic mutations of seed files: bytes, JSON structure, NNVM attributes, special files.

Every mutator is ``fn(rng, data) -> Mutant`` with ``rng = random.Random(...)`` so that a case is
reproduced from its seed alone. JSON mutators splice raw text in place of a marker, because
the damage they make (100,000 nested lists, 5,000-digit numbers, invalid UTF-8) is exactly
what ``json.dumps`` cannot or will not write. The ONNX mutators are in ``onnx_mutators.py``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["BYTE_MUTATORS", "JSON_MUTATORS", "SPECIALS", "Mutant", "Mutator"]

MARK = "@@XOCFUZZ@@"
Path_ = tuple[Any, ...]


@dataclass
class Mutant:
    """A damaged file: its bytes (or a special file kind), side files and what was done."""

    description: str
    data: bytes = b""
    special: str | None = None  # fifo | dev-zero | directory | empty | dangling | loop | sparse
    side_files: dict[str, bytes] = field(default_factory=dict)
    # Attack cases only: the case file's own name, symlinks (name -> target) made beside it,
    # and fields the worker needs beyond the file (a kill step, say).
    file_name: str | None = None
    links: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


Mutator = Callable[[random.Random, bytes], Mutant]


# -- byte level ------------------------------------------------------------------------------


def truncate(rng: random.Random, data: bytes) -> Mutant:
    at = rng.randrange(len(data)) if data else 0
    return Mutant(f"truncate at byte {at} of {len(data)}", data[:at])


def flip_bytes(rng: random.Random, data: bytes) -> Mutant:
    buf = bytearray(data or b"\0")
    spots = [rng.randrange(len(buf)) for _ in range(rng.choice((1, 1, 2, 4, 16)))]
    for at in spots:
        buf[at] ^= 1 << rng.randrange(8) if rng.random() < 0.5 else rng.randrange(1, 256)
    return Mutant(f"flip bytes at {spots[:4]}{'...' if len(spots) > 4 else ''}", bytes(buf))


_INTERESTING = [b"\0", b"\xff", b'"', b"[", b"{", b"}", b"]", b",", b"\\", b"\xc3", b"-", b"9"]


def insert_bytes(rng: random.Random, data: bytes) -> Mutant:
    at = rng.randrange(len(data) + 1)
    if rng.random() < 0.5:
        chunk = rng.choice(_INTERESTING) * rng.choice((1, 2, 8))
    else:
        chunk = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 17)))
    return Mutant(f"insert {chunk[:16]!r} at byte {at}", data[:at] + chunk + data[at:])


def delete_bytes(rng: random.Random, data: bytes) -> Mutant:
    if not data:
        return Mutant("delete from an empty file", data)
    at = rng.randrange(len(data))
    n = rng.randrange(1, min(64, len(data) - at) + 1)
    return Mutant(f"delete {n} bytes at {at}", data[:at] + data[at + n :])


def duplicate_chunk(rng: random.Random, data: bytes) -> Mutant:
    if not data:
        return Mutant("duplicate in an empty file", data)
    a = rng.randrange(len(data))
    b = min(len(data), a + rng.randrange(1, 4097))
    times = rng.choice((1, 1, 2, 10, 100))
    times = max(1, min(times, 4_000_000 // (b - a)))
    at = rng.randrange(len(data) + 1)
    desc = f"duplicate bytes {a}:{b} x{times} at {at}"
    return Mutant(desc, data[:at] + data[a:b] * times + data[at:])


BYTE_MUTATORS: dict[str, Mutator] = {
    "byte.truncate": truncate,
    "byte.flip": flip_bytes,
    "byte.insert": insert_bytes,
    "byte.delete": delete_bytes,
    "byte.duplicate": duplicate_chunk,
}


# -- JSON structure --------------------------------------------------------------------------


def _walk(value: Any, path: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """Every (path, value) pair, the root included, without recursion."""
    stack = [(path, value)]
    while stack:
        p, v = stack.pop()
        yield p, v
        if isinstance(v, dict):
            stack.extend(((*p, k), c) for k, c in v.items())
        elif isinstance(v, list):
            stack.extend(((*p, i), c) for i, c in enumerate(v))


def _get(root: Any, path: Path_) -> Any:
    for k in path:
        root = root[k]
    return root


def _set(root: Any, path: Path_, value: Any) -> Any:
    if not path:
        return value
    _get(root, path[:-1])[path[-1]] = value
    return root


def _place(path: Path_) -> str:
    out = ""
    for k in path:
        out += f"[{k}]" if isinstance(k, int) else f".{k}" if out else str(k)
    return out or "(root)"


def _dump(root: Any, raw: str | bytes | None = None) -> bytes:
    """``root`` as JSON bytes with the marker string replaced by ``raw`` text or bytes."""
    text = json.dumps(root, allow_nan=True).encode()
    if raw is None:
        return text
    raw_b = raw.encode() if isinstance(raw, str) else raw
    return text.replace(json.dumps(MARK).encode(), raw_b, 1)


def _pick(rng: random.Random, root: Any, want: Callable[[Path_, Any], bool]) -> Path_ | None:
    found = [p for p, v in _walk(root) if want(p, v)]
    return rng.choice(found) if found else None


def _any(p: Path_, v: Any) -> bool:
    return bool(p)


def _is_int(p: Path_, v: Any) -> bool:
    return bool(p) and isinstance(v, int) and not isinstance(v, bool)


def _is_str(p: Path_, v: Any) -> bool:
    return bool(p) and isinstance(v, str)


_VALUES: list[Any] = ["x", 7, -1, 1.5, [], [1, 2], {}, {"k": 1}, None, True, False, ""]


def swap_type(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, _any) or ()
    old = _get(root, path)
    new = rng.choice([v for v in _VALUES if type(v) is not type(old)])
    return Mutant(f"json.swap_type {_place(path)} := {new!r}", _dump(_set(root, path, new)))


def delete_key(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, lambda p, v: isinstance(v, dict) and bool(v))
    if path is None:
        return swap_type(rng, root)
    holder = _get(root, path)
    key = rng.choice(sorted(holder, key=str))
    del holder[key]
    return Mutant(f"json.delete_key {_place((*path, key))}", _dump(root))


def duplicate_item(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, lambda p, v: isinstance(v, list) and bool(v))
    if path is None:
        return swap_type(rng, root)
    items = _get(root, path)
    i = rng.randrange(len(items))
    n = rng.choice((1, 1, 5, 1000))
    items[i:i] = [items[i]] * n
    return Mutant(f"json.duplicate_item {_place(path)}[{i}] x{n}", _dump(root))


def remove_item(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, lambda p, v: isinstance(v, list) and bool(v))
    if path is None:
        return swap_type(rng, root)
    items = _get(root, path)
    if rng.random() < 0.2:
        items.clear()
        return Mutant(f"json.remove_item {_place(path)} (all)", _dump(root))
    i = rng.randrange(len(items))
    del items[i]
    return Mutant(f"json.remove_item {_place(path)}[{i}]", _dump(root))


_INDEX_KEYS = ("inputs", "outputs", "heads", "arg_nodes", "node_row_ptr", "nodes", "children")


def bad_index(rng: random.Random, root: Any) -> Mutant:
    def indexish(p: Path_, v: Any) -> bool:
        return _is_int(p, v) and any(str(k).startswith(_INDEX_KEYS) for k in p)

    path = _pick(rng, root, indexish) or _pick(rng, root, _is_int)
    if path is None:
        return swap_type(rng, root)
    new = rng.choice((-1, -5, 10**6, 2**31, 2**63, 2**64 + 1, _get(root, path) + 1))
    return Mutant(f"json.bad_index {_place(path)} := {new}", _dump(_set(root, path, new)))


def deep_nesting(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, _any) or ()
    n = rng.choice((1000, 1100, 5000, 100_000))
    shape = rng.choice(("list", "dict", "mixed"))
    if shape == "list":
        raw = "[" * n + "1" + "]" * n
    elif shape == "dict":
        raw = '{"a":' * n + "1" + "}" * n
    else:
        raw = '[{"a":' * (n // 2) + "1" + "}]" * (n // 2)
    desc = f"json.deep_nesting {_place(path)} := {n} nested {shape}"
    return Mutant(desc, _dump(_set(root, path, MARK), raw))


_HUGE = (
    "9" * 5000,
    "-" + "9" * 5000,
    "1" + "0" * 4300,
    "1e999",
    "-1e999",
    "1e-999",
    "NaN",
    "Infinity",
    "-Infinity",
    "9" * 400 + ".5",
    "1" * 100_000,
)


def huge_number(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, _is_int) if rng.random() < 0.7 else None
    path = path or _pick(rng, root, _any) or ()
    raw = rng.choice(_HUGE)
    desc = f"json.huge_number {_place(path)} := {raw[:12]}... ({len(raw)} chars)"
    return Mutant(desc, _dump(_set(root, path, MARK), raw))


_SHAPE_KEYS = ("shape", "dims", "dim", "__shape__", "output_shape", "shapes")
_SHAPES: list[Any] = [
    [10**9, 10**9],
    [10**9] * 4,
    [-5],
    [-5, 3],
    [0],
    [2**62, 2**62],
    [2**63],
    [1] * 100,
    ["a"],
    [1.5],
    [],
    [[1, 2]],
]


def huge_shape(rng: random.Random, root: Any) -> Mutant:
    def shapeish(p: Path_, v: Any) -> bool:
        return bool(p) and isinstance(v, list) and str(p[-1]).lower() in _SHAPE_KEYS

    def int_list(p: Path_, v: Any) -> bool:
        return bool(p) and isinstance(v, list) and bool(v) and all(type(x) is int for x in v)

    path = _pick(rng, root, shapeish) or _pick(rng, root, int_list)
    if path is None:
        return swap_type(rng, root)
    new = rng.choice(_SHAPES)
    return Mutant(f"json.huge_shape {_place(path)} := {new!r}", _dump(_set(root, path, new)))


_BAD_UTF8 = (
    b'"ab\xffcd"',
    b'"\xc3\x28"',
    b'"\xed\xa0\x80"',
    b'"\xf4\x90\x80\x80"',
    b'"\xc0\xaf"',
    b'"\\ud800"',
    b'"x\\udfffy"',
    b'"nul\\u0000nul"',
    b'"\xe2\x82"',
)


def bad_utf8(rng: random.Random, root: Any) -> Mutant:
    path = _pick(rng, root, _is_str) or _pick(rng, root, _any) or ()
    raw = rng.choice(_BAD_UTF8)
    return Mutant(f"json.bad_utf8 {_place(path)} := {raw!r}", _dump(_set(root, path, MARK), raw))


_NAME_KEYS = ("id", "name", "op", "op_type", "type")


def long_string(rng: random.Random, root: Any) -> Mutant:
    def named(p: Path_, v: Any) -> bool:
        return _is_str(p, v) and str(p[-1]) in _NAME_KEYS

    path = _pick(rng, root, named) or _pick(rng, root, _is_str)
    if path is None:
        return swap_type(rng, root)
    n = rng.choice((10**6, 10**5, 5000))
    text = rng.choice(("A", "é", "a b ", "\n", "\u202e"))
    new = (text * n)[:n]
    desc = f"json.long_string {_place(path)} := {text!r} * {n}"
    return Mutant(desc, _dump(_set(root, path, new)))


_ATTR_KEYS = ("attrs", "attr", "param", "attributes")
_ATTR_TEXT = (
    "9" * 5000,
    "(" + "9" * 5000 + ", 3)",
    "(" * 100_000 + ")" * 100_000,
    "(" * 1000 + "1" + ")" * 1000,
    "[" * 5000,
    "(1e999, nan)",
    "(" + ", ".join(["1000000000"] * 8) + ")",
    "(-5, -5)",
    "(1,",
    "None",
    "inf",
    "-nan",
    "0x7fffffffffffffffffff",
    "__import__('os').system('true')",
    "(" + ",".join(["1"] * 100_000) + ")",
    "",
    "((1, 2), (3, 4)",
)


def nnvm_attr(rng: random.Random, root: Any) -> Mutant:
    """NNVM attribute strings: huge ints, deep parentheses, things an eval would run."""

    def attr(p: Path_, v: Any) -> bool:
        return _is_str(p, v) and any(str(k) in _ATTR_KEYS for k in p[:-1])

    path = _pick(rng, root, attr)
    raw = rng.choice(_ATTR_TEXT)
    if path is None:  # no attribute: give a node one
        nodes = _pick(rng, root, lambda p, v: isinstance(v, dict) and "op" in v)
        if nodes is None:
            return swap_type(rng, root)
        _get(root, nodes).setdefault("attrs", {})["kernel"] = raw
        desc = f"nnvm_attr {_place(nodes)}.attrs.kernel := {raw[:16]!r}... ({len(raw)} chars)"
        return Mutant(desc, _dump(root))
    desc = f"nnvm_attr {_place(path)} := {raw[:16]!r}... ({len(raw)} chars)"
    return Mutant(desc, _dump(_set(root, path, raw)))


JSON_MUTATORS: dict[str, Callable[[random.Random, Any], Mutant]] = {
    "json.swap_type": swap_type,
    "json.delete_key": delete_key,
    "json.duplicate_item": duplicate_item,
    "json.remove_item": remove_item,
    "json.bad_index": bad_index,
    "json.deep_nesting": deep_nesting,
    "json.huge_number": huge_number,
    "json.huge_shape": huge_shape,
    "json.bad_utf8": bad_utf8,
    "json.long_string": long_string,
    "json.nnvm_attr": nnvm_attr,
}


# -- special files ---------------------------------------------------------------------------


def _special(kind: str, what: str) -> Mutator:
    def make(rng: random.Random, data: bytes) -> Mutant:
        return Mutant(f"special.{kind}: {what}", special=kind)

    return make


SPECIALS: dict[str, Mutator] = {
    "special.fifo": _special("fifo", "a named pipe with no writer"),
    "special.dev-zero": _special("dev-zero", "a symlink to /dev/zero"),
    "special.directory": _special("directory", "a directory with the file's name"),
    "special.empty": _special("empty", "an empty file"),
    "special.dangling": _special("dangling", "a symlink to nothing"),
    "special.loop": _special("loop", "a symlink to itself"),
    "special.sparse": _special("sparse", "a sparse file of 3 GiB of zeros"),
}
