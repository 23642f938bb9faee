"""The canonical text of an XOC JSON graph: deterministic, 2-space indent, short things inline.

A value goes on one line when that line fits in 100 columns, otherwise its members go one per
line (the layout of the spec's example and of the files the other XOC tool writes). Keys come
in the spec's order; metadata keeps its own order; empty node and tensor metadata is left out,
the root's is written as ``{}``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from xocview.model import Graph, Node, Tensor
from xocview.model.attribute_tensor import lazy_attribute_tensors

__all__ = ["WIDTH", "dumps", "values_note"]

WIDTH = 100
_enc = json.JSONEncoder(ensure_ascii=False).encode


def dumps(graph: Graph) -> str:
    """The whole file's text, ending in a newline."""
    out: list[str] = ["{"]
    add = out.append
    add(f'  "id": {_str(graph.id)},')
    add(f'  "name": {_str(graph.name)},')
    _members(out, '"tensors": ', graph.tensors, 2, ",", _tensor)
    _members(out, '"nodes": ', graph.nodes, 2, ",", _node)
    _value(out, '"inputs": ', list(graph.inputs), 2, ",")
    _value(out, '"outputs": ', list(graph.outputs), 2, ",")
    _value(out, '"metadata": ', graph.metadata, 2, "")
    add("}")
    add("")
    return "\n".join(out)


def values_note(graph: Graph) -> str | None:
    """What the file leaves out: the values of weights and of large tensor attributes (a
    Constant holding weights), counted from their shapes without reading them; None when
    there are none."""
    weights = [t.shape for t in graph.tensors if t.has_data]
    attrs = [
        t.get("shape", [])
        for nd in graph.nodes
        for value in _attribute_values(nd)
        for t in lazy_attribute_tensors(value)
    ]
    if not weights and not attrs:
        return None
    count = sum(math.prod(max(int(d), 0) for d in s) for s in (*weights, *attrs))
    parts = [f"{len(weights):,} weight{'s' * (len(weights) != 1)}"] if weights else []
    if attrs:
        parts.append(f"{len(attrs):,} attribute tensor{'s' * (len(attrs) != 1)}")
    many = len(weights) + len(attrs) != 1
    return (
        f"{' and '.join(parts)} ({count:,} value{'s' * (count != 1)}) {'are' if many else 'is'} "
        f"written without {'their' if many else 'its'} values: XOC JSON keeps shapes and dtypes"
    )


def _attribute_values(nd: Node) -> list[Any]:
    """The node's attribute values, schema ones and those kept in metadata."""
    values = list(nd.attributes.values())
    extra = nd.metadata.get("attributes")
    if isinstance(extra, dict):
        values.extend(extra.values())
    return values


def _members(
    out: list[str], prefix: str, items: list[Any], indent: int, suffix: str, write: Any
) -> None:
    pad = " " * indent
    if not items:
        out.append(f"{pad}{prefix}[]{suffix}")
        return
    out.append(f"{pad}{prefix}[")
    last = len(items) - 1
    for i, item in enumerate(items):
        write(out, item, indent + 2, "," if i < last else "")
    out.append(f"{pad}]{suffix}")


def _tensor(out: list[str], t: Tensor, indent: int, suffix: str) -> None:
    head = (
        f'{{ "id": {_str(t.id)}, "name": {_str(t.kind)}, '
        f'"shape": [{", ".join(map(str, t.shape))}], "dtype": {_str(t.dtype)}'
    )
    if not t.metadata:
        line = f"{' ' * indent}{head} }}{suffix}"
        if len(line) <= WIDTH:
            out.append(line)
            return
    fields: dict[str, Any] = {"id": t.id, "name": t.kind, "shape": list(t.shape), "dtype": t.dtype}
    if t.metadata:
        fields["metadata"] = t.metadata
    _value(out, "", fields, indent, suffix)


def _node(out: list[str], nd: Node, indent: int, suffix: str) -> None:
    fields: dict[str, Any] = {
        "id": nd.id,
        "name": nd.op_type,
        "inputs": list(nd.inputs),
        "outputs": list(nd.outputs),
        "attributes": nd.attributes,
    }
    if nd.metadata:
        fields["metadata"] = nd.metadata
    _value(out, "", fields, indent, suffix)


def _value(out: list[str], prefix: str, value: Any, indent: int, suffix: str) -> None:
    """Append ``value`` (after ``prefix``, e.g. a key) inline if it fits, else expanded."""
    pad = " " * indent
    budget = WIDTH - indent - len(prefix) - len(suffix)
    text = _inline(value, budget)
    if text is not None:
        out.append(f"{pad}{prefix}{text}{suffix}")
        return
    if isinstance(value, dict):
        out.append(f"{pad}{prefix}{{")
        last = len(value) - 1
        for i, (k, v) in enumerate(value.items()):
            _value(out, f"{_str(str(k))}: ", v, indent + 2, "," if i < last else "")
        out.append(f"{pad}}}{suffix}")
    else:
        out.append(f"{pad}{prefix}[")
        last = len(value) - 1
        for i, v in enumerate(value):
            _value(out, "", v, indent + 2, "," if i < last else "")
        out.append(f"{pad}]{suffix}")


def _inline(value: Any, budget: int) -> str | None:
    """One-line text of ``value`` if it fits in ``budget`` characters (scalars always fit)."""
    enc = _SCALARS.get(type(value))
    if enc is not None:
        return enc(value)
    if isinstance(value, dict):
        if not value:
            return "{}"
        parts: list[str] = []
        used = 2
        for k, v in value.items():
            key = _str(k) if type(k) is str else _str(str(k))
            inner = _inline(v, budget - used - len(key) - 4)
            if inner is None:
                return None
            parts.append(f"{key}: {inner}")
            used += len(key) + len(inner) + 4
            if used > budget:
                return None
        return "{ " + ", ".join(parts) + " }"
    if isinstance(value, (list, tuple)):
        if not value:
            return "[]"
        if all(type(v) is int for v in value):
            text = "[" + ", ".join(map(str, value)) + "]"
            return text if len(text) <= budget else None
        parts = []
        used = 0
        for v in value:
            inner = _inline(v, budget - used - 2)
            if inner is None:
                return None
            parts.append(inner)
            used += len(inner) + 2
            if used > budget:
                return None
        return "[" + ", ".join(parts) + "]"
    return _other(value)


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (_INF, -_INF):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


def _other(value: Any) -> str:
    """numpy scalars and arrays that a loader left in metadata, else json's own rules."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        converted = value.tolist()
        return _inline(converted, 1 << 30) or _enc(converted)
    return _enc(value)


_INF = float("inf")
_str = json.encoder.encode_basestring  # ensure_ascii=False, as _enc
_SCALARS: dict[type, Any] = {
    str: _str,
    int: int.__repr__,
    float: _float,
    bool: lambda v: "true" if v else "false",
    type(None): lambda v: "null",
}
