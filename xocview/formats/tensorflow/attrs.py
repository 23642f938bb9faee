"""A NodeDef's attributes as plain values an inspector shows and XOC JSON keeps.

Types read as xocview dtype names, shapes as lists (-1 unknown), functions by name, and a
tensor as its values when it is small, else as a one-line summary: the attribute pane is no
place for a megabyte of floats, and the values stay reachable through the Const's tensor.
"""

from __future__ import annotations

from typing import Any

from xocview.formats.tensorflow.protos import BadTensor, shape_of, tensor_array, xoc_dtype

__all__ = ["attr_value", "node_attrs"]

_SMALL = 16


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.hex()


def _tensor(t: Any) -> Any:
    try:
        values = tensor_array(t)
    except BadTensor as e:
        return f"<tensor: {e}>"
    if values.size <= _SMALL:
        if values.dtype == object:
            return [_text(v) for v in values.reshape(-1).tolist()]
        return values.tolist()
    shape = "x".join(str(d) for d in values.shape)
    return f"<{xoc_dtype(t.dtype)} {shape}>"


def attr_value(v: Any) -> Any:
    """One AttrValue as a plain value (None for an empty one)."""
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "s":
        return _text(v.s)
    if kind == "type":
        return xoc_dtype(v.type)
    if kind == "shape":
        return shape_of(v.shape)
    if kind == "tensor":
        return _tensor(v.tensor)
    if kind == "func":
        return v.func.name
    if kind == "list":
        return _list(v.list)
    return getattr(v, kind)


def _list(lv: Any) -> list[Any]:
    for field in ("s", "i", "f", "b", "type", "shape", "tensor", "func"):
        items = getattr(lv, field)
        if not items:
            continue
        if field == "s":
            return [_text(x) for x in items]
        if field == "type":
            return [xoc_dtype(x) for x in items]
        if field == "shape":
            return [shape_of(x) for x in items]
        if field == "tensor":
            return [_tensor(x) for x in items]
        if field == "func":
            return [x.name for x in items]
        return list(items)
    return []


def node_attrs(attr: Any) -> dict[str, Any]:
    """Every attribute but TensorFlow's private ones (``_output_shapes``, ``_class``...)."""
    return {k: attr_value(attr[k]) for k in sorted(attr) if not k.startswith("_")}
