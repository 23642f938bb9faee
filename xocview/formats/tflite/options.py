"""An operator's builtin options table read into a plain dict (``stride_h``, ``padding``).

The generated readers have one class per options table, named in the ``BuiltinOptions``
union; every field is a getter without arguments (scalars) or with an index (vectors, read
``AsNumpy``). Enum fields that the mapping reads are given by name (``padding: "SAME"``).
"""

from __future__ import annotations

import re
from typing import Any

import tflite

from xocview.formats.tflite.flat import Flat

__all__ = ["builtin_options"]

_UNION = {v: k for k, v in vars(tflite.BuiltinOptions).items() if isinstance(v, int)}
_UNION2 = {v: k for k, v in vars(tflite.BuiltinOptions2).items() if isinstance(v, int)}
_ENUMS: dict[str, dict[int, str]] = {
    name: {v: k for k, v in vars(getattr(tflite, cls)).items() if isinstance(v, int)}
    for name, cls in (
        ("FusedActivationFunction", "ActivationFunctionType"),
        ("Padding", "Padding"),
        ("Mode", "MirrorPadMode"),
        ("KernelType", "LSTMKernelType"),
    )
}
_SKIP = ("Init", "GetRootAs")


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def builtin_options(flat: Flat, place: str, op: Any) -> dict[str, Any]:
    """The op's options as ``{field: value}`` with ``type`` naming the table; {} if none."""
    kind = flat.get(place, op.BuiltinOptionsType)
    union = _UNION
    table = None
    if kind:
        table = flat.get(place, op.BuiltinOptions)
    else:
        kind = flat.get(place, op.BuiltinOptions2Type)
        union = _UNION2
        if kind:
            table = flat.get(place, op.BuiltinOptions2)
    if not kind or table is None:
        return {}
    name = union.get(kind)
    cls = getattr(tflite, name, None) if name else None
    if cls is None:
        return {"type": f"options {kind}"}
    options = cls()
    options.Init(table.Bytes, table.Pos)
    out: dict[str, Any] = {"type": name}
    with flat.at(f"{place}.builtin_options"):
        for field in _fields(cls):
            out[_snake(field)] = _value(flat, f"{place}.builtin_options", options, field)
    return out


def _fields(cls: type) -> list[str]:
    names = [m for m in vars(cls) if m[:1].isupper()]
    return [
        m
        for m in names
        if not m.startswith(_SKIP)
        and not m.endswith(("BufferHasIdentifier", "Length", "IsNone", "AsNumpy"))
        and m not in ("Init",)
    ]


def _value(flat: Flat, place: str, options: Any, field: str) -> Any:
    vector = getattr(options, f"{field}Length", None)
    if vector is not None:
        as_np = getattr(options, f"{field}AsNumpy", None)
        if as_np is None:
            return f"{flat.count(place, vector)} entries"
        return flat.ints(place, as_np, vector)
    value = getattr(options, field)()
    if field in _ENUMS and isinstance(value, int):
        return _ENUMS[field].get(value, value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (int, float, bool)):
        return value
    return type(value).__name__
