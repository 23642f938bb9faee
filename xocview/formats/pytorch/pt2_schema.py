"""The JSON of a serialized ExportedProgram (torch/_export/serde/schema.py), read without torch.

Every value is checked as it is taken, so a damaged archive is refused at the JSON path of the
fault (``models/model.json graph_module.graph.tensor_values.x.dtype``) instead of failing later.
Arguments become plain Python values the lowering reads by name: ``Ref`` for a tensor or a
symbolic integer, ints, floats, bools, strings, lists, dtype names for scalar types.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from xocview.errors import FormatError, shorten

__all__ = [
    "SCALAR_TYPES",
    "Json",
    "Ref",
    "TensorInfo",
    "argument",
    "dtype_of",
    "symbol_text",
    "tensor_info",
]

# torch's ScalarType serialization codes (schema.py ``ScalarType``) -> XOC dtype names.
SCALAR_TYPES: dict[int, str] = {
    1: "uint8",
    2: "int8",
    3: "int16",
    4: "int32",
    5: "int64",
    6: "float16",
    7: "float32",
    8: "double",
    10: "complex64",
    11: "complex128",
    12: "bool",
    13: "bfloat16",
    28: "uint16",
    29: "float8e4m3fn",
    30: "float8e5m2",
    31: "float8e4m3fnuz",
    32: "float8e5m2fnuz",
    33: "float8e8m0",
    34: "uint32",
    35: "uint64",
}
_SYMBOL = re.compile(r"Symbol\('([^']*)'[^)]*\)")
_INTEGER = re.compile(r"Integer\((-?\d+)\)")
_LAYOUTS = {0: "unknown", 1: "sparse_coo", 2: "sparse_csr", 3: "sparse_csc", 4: "sparse_bsr"}
_LAYOUTS |= {5: "sparse_bsc", 6: "mkldnn", 7: "strided"}
_MEMORY_FORMATS = {0: "unknown", 1: "contiguous", 2: "channels_last", 3: "channels_last_3d"}
_MEMORY_FORMATS |= {4: "preserve"}


class Json:
    """Where values are read from (the archive and member) for messages that name the place."""

    def __init__(self, file: str, member: str) -> None:
        self.file, self.member = file, member

    def error(self, place: str, problem: str, expected: str | None = None) -> FormatError:
        where = f"{self.member} {place}" if place else self.member
        return FormatError(self.file, where, problem, expected)

    def obj(self, value: Any, place: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.error(place, f"is {_kind(value)}", "a JSON object")
        return value

    def key(self, value: dict[str, Any], key: str, place: str, kind: type | None = None) -> Any:
        """``value[key]``, which must be there (and of ``kind`` when given)."""
        if key not in value:
            raise self.error(place, f"has no {key!r}", f"the field {key!r}")
        got = value[key]
        if kind is not None and not _is(got, kind):
            raise self.error(f"{place}.{key}", f"is {_kind(got)}", f"{_name(kind)}")
        return got

    def opt(self, value: dict[str, Any], key: str, place: str, kind: type, default: Any) -> Any:
        got = value.get(key, default)
        if got is None:
            return default
        if not _is(got, kind):
            raise self.error(f"{place}.{key}", f"is {_kind(got)}", f"{_name(kind)}")
        return got

    def union(self, value: Any, place: str) -> tuple[str, Any]:
        """The one field of a serialized union (``{"as_int": 3}``)."""
        obj = self.obj(value, place)
        if len(obj) != 1:
            raise self.error(place, f"has {len(obj)} fields", "one field (a union's member)")
        return next(iter(obj.items()))


@dataclass(frozen=True)
class Ref:
    """A value of the graph named ``name``: a tensor, or a symbolic integer (``sym``)."""

    name: str
    sym: bool = False


@dataclass
class TensorInfo:
    """A tensor's meta: dtype name, shape (-1 for symbolic sizes) and their symbols."""

    dtype: str
    shape: list[int]
    symbols: list[str | None]
    strides: list[int] | None
    offset: int
    requires_grad: bool
    device: str

    def metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if any(self.symbols):
            out["shape_symbols"] = list(self.symbols)
        if self.device not in ("cpu", ""):
            out["device"] = self.device
        return out


def symbol_text(expr: str) -> str:
    """A size expression as people write it: torch 2.13 writes sympy's ``srepr``
    (``Symbol('s23', positive=True, integer=True)``), which becomes ``s23``."""
    if "(" not in expr:
        return expr
    return _INTEGER.sub(r"\1", _SYMBOL.sub(r"\1", expr))


def dtype_of(j: Json, code: Any, place: str) -> str:
    """The XOC dtype name of a ScalarType code; FormatError for an unknown code."""
    name = SCALAR_TYPES.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    if name is None:
        known = "ComplexHalf, which xocview has no type for" if code == 9 else "unknown"
        raise j.error(
            place, f"dtype code {shorten(code)} is {known}", "a torch ScalarType code (1-13, 28-35)"
        )
    return name


def _sym_int(j: Json, value: Any, place: str) -> tuple[int, str | None]:
    """A SymInt as (size, symbol): ``as_int`` -> (n, None); ``as_expr`` -> (-1, expression)."""
    kind, v = j.union(value, place)
    if kind == "as_int" and _is(v, int):
        return v, None
    if kind == "as_expr":
        expr = j.key(j.obj(v, f"{place}.as_expr"), "expr_str", f"{place}.as_expr", str)
        return -1, symbol_text(expr)
    raise j.error(place, f"is {shorten(kind)}", "as_int or as_expr")


def tensor_info(j: Json, value: Any, place: str) -> TensorInfo:
    """A TensorMeta: dtype code, sizes, strides, storage offset, device."""
    meta = j.obj(value, place)
    dtype = dtype_of(j, j.key(meta, "dtype", place), f"{place}.dtype")
    sizes = j.key(meta, "sizes", place, list)
    shape: list[int] = []
    symbols: list[str | None] = []
    for k, s in enumerate(sizes):
        n, sym = _sym_int(j, s, f"{place}.sizes[{k}]")
        if n < -1:
            raise j.error(f"{place}.sizes[{k}]", f"size {n}", "a size of 0 or more")
        shape.append(n)
        symbols.append(sym)
    strides: list[int] | None = []
    for k, s in enumerate(j.opt(meta, "strides", place, list, [])):
        n, sym = _sym_int(j, s, f"{place}.strides[{k}]")
        if sym is not None:
            strides = None
            break
        strides.append(n)  # type: ignore[union-attr]
    offset = 0
    if meta.get("storage_offset") is not None:
        offset, sym = _sym_int(j, meta["storage_offset"], f"{place}.storage_offset")
        offset = max(offset, 0)
    device = meta.get("device")
    where = device.get("type", "") if isinstance(device, dict) else ""
    return TensorInfo(
        dtype,
        shape,
        symbols,
        strides if strides and len(strides) == len(shape) else None,
        offset,
        bool(meta.get("requires_grad", False)),
        where if isinstance(where, str) else "",
    )


def argument(j: Json, value: Any, place: str) -> Any:
    """A serialized Argument as a Python value (see the module docstring)."""
    kind, v = j.union(value, place)
    sub = f"{place}.{kind}"
    if kind in _SIMPLE:
        if _SIMPLE[kind] is float and isinstance(v, str) and v in _SPECIAL:
            return _SPECIAL[v]
        if not _is(v, _SIMPLE[kind]):
            raise j.error(sub, f"is {_kind(v)}", _name(_SIMPLE[kind]))
        return v
    if kind in _LISTS:
        items = v if isinstance(v, list) else None
        if items is not None and _LISTS[kind] is float:
            items = [_SPECIAL.get(x, x) if isinstance(x, str) else x for x in items]
        if items is None or not all(_is(x, _LISTS[kind]) for x in items):
            raise j.error(sub, f"is {_kind(v)}", f"a list of {_name(_LISTS[kind])}")
        return list(items)
    if kind == "as_none":
        return None
    if kind == "as_tensor":
        return Ref(j.key(j.obj(v, sub), "name", sub, str))
    if kind in ("as_tensors", "as_optional_tensors", "as_sym_ints", "as_sym_floats"):
        if not isinstance(v, list):
            raise j.error(sub, f"is {_kind(v)}", "a list")
        return [_item(j, kind, x, f"{sub}[{k}]") for k, x in enumerate(v)]
    if kind in ("as_sym_int", "as_sym_float", "as_sym_bool", "as_optional_tensor"):
        return _item(j, kind + "s", v, sub)
    return _described(j, kind, v, place)


def _described(j: Json, kind: str, v: Any, place: str) -> Any:
    """The arguments that describe rather than hold values: dtypes, layouts, devices..."""
    sub = f"{place}.{kind}"
    if kind == "as_scalar_type":
        return dtype_of(j, v, sub)
    if kind in ("as_layout", "as_memory_format"):
        names = _LAYOUTS if kind == "as_layout" else _MEMORY_FORMATS
        if not _is(v, int):
            raise j.error(sub, f"is {_kind(v)}", "an integer code")
        return names.get(v, f"{kind[3:].replace('_', ' ')} {v}")
    if kind == "as_device":
        d = j.obj(v, sub)
        where, index = d.get("type"), d.get("index")
        return f"{where if isinstance(where, str) else ''}" + (
            f":{index}" if _is(index, int) else ""
        )
    if kind == "as_complex":
        d = j.obj(v, sub)
        parts = [j.opt(d, key, sub, float, 0.0) for key in ("real", "imag")]
        return complex(parts[0], parts[1])
    if kind == "as_graph":
        return {"graph": j.key(j.obj(v, sub), "name", sub, str)}
    if kind in ("as_custom_obj", "as_operator", "as_string_to_argument", "as_nested_tensors"):
        return {"unsupported": kind}
    raise j.error(place, f"argument kind {shorten(kind)} is unknown", "a torch.export Argument")


_SIMPLE: dict[str, type] = {"as_int": int, "as_float": float, "as_bool": bool, "as_string": str}
# torch writes the floats JSON has no number for as these strings (allow_nan=False).
_SPECIAL: dict[Any, float] = {
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
    "NaN": float("nan"),
}
_LISTS: dict[str, type] = {
    "as_ints": int,
    "as_floats": float,
    "as_bools": bool,
    "as_strings": str,
    "as_int_lists": list,
    "as_float_lists": list,
}


def _item(j: Json, kind: str, value: Any, place: str) -> Any:
    """One item of a tensor or symbolic list: a Ref, None, or a plain number."""
    if kind == "as_tensors":
        return Ref(j.key(j.obj(value, place), "name", place, str))
    what, v = j.union(value, place)
    if what == "as_none":
        return None
    if what == "as_tensor":
        return Ref(j.key(j.obj(v, place), "name", place, str))
    if what == "as_name" and isinstance(v, str):
        return Ref(v, sym=True)
    if what == "as_float" and isinstance(v, str) and v in _SPECIAL:
        return _SPECIAL[v]
    if what in ("as_int", "as_float", "as_bool") and _is(v, _SIMPLE[what]):
        return v
    raise j.error(place, f"is {shorten(what)}", "a name or a number")


def _is(value: Any, kind: type) -> bool:
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "a number",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _name(kind: type) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        int: "an integer",
        float: "a number",
        bool: "a boolean",
    }.get(kind, kind.__name__)
