"""A TorchScript call of an ATen op made ready for the graph: its overload chosen and its
arguments named by the schema (``torchscript_schemas``), its outputs' dtypes decided, and the
calls on plain numbers folded (``torch.add(2, 3)`` is 5; TorchScript spells ``a + b`` so).

TorchScript writes dtypes as c10's ScalarType codes (``dtype=6``); they become XOC dtype
names here. Values are the walk's: ``Ref`` for tensors and symbolic ints, Python numbers,
strings, lists, tuples and None, ``Unknown`` for a value the walk cannot know.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_schemas import Schema, schemas

__all__ = ["C10_DTYPES", "NO_FOLD", "Unknown", "bind", "fold", "out_types"]

# c10::ScalarType codes -> XOC dtype names
C10_DTYPES = {
    0: "uint8",
    1: "int8",
    2: "int16",
    3: "int32",
    4: "int64",
    5: "float16",
    6: "float32",
    7: "double",
    9: "complex64",
    10: "complex128",
    11: "bool",
    15: "bfloat16",
    23: "float8e5m2",
    24: "float8e4m3fn",
    25: "float8e5m2fnuz",
    26: "float8e4m3fnuz",
    27: "uint16",
    28: "uint32",
    29: "uint64",
}
_FLOATS = ("float16", "bfloat16", "float32", "double")
_BOOL_OUT = frozenset(
    [
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
        "isnan",
        "logical_not",
        "logical_and",
        "logical_or",
        "logical_xor",
    ]
)
_INT64_OUT = frozenset({"argmax", "argmin"})
_TRUE_DIV = frozenset({"div"})
_MAX_INT = 1 << 63
_MAX_ITEMS = 1 << 20
NO_FOLD = object()


@dataclass(frozen=True)
class Unknown:
    """A value the walk cannot know (a size of an input of unknown shape, an If's result);
    ``fact`` says what it is when an assumption could teach something: ``("dim", ref)``,
    ``("ne", ("dim", ref), 4)``."""

    text: str
    fact: tuple[Any, ...] | None = None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _fits(v: Any, kind: str) -> bool:
    """Whether the walk's value ``v`` can be passed as an argument of torch type ``kind``."""
    optional = kind.endswith("?")
    base = kind.rstrip("?")
    if v is None:
        return optional
    if isinstance(v, Unknown):
        return not base.startswith("Tensor")
    if base == "Tensor":
        return isinstance(v, Ref) and not v.sym
    if base in ("Tensor[]", "Tensor?[]"):
        return isinstance(v, (list, tuple)) and all(
            (isinstance(x, Ref) and not x.sym) or (x is None and "?" in base) for x in v
        )
    if base in ("int", "SymInt"):
        return _is_int(v) or (isinstance(v, Ref) and v.sym)
    if base.startswith(("int[", "SymInt[")):
        if _is_int(v) or (isinstance(v, Ref) and v.sym):
            return base[-2] != "["  # ``int[2] padding=0`` takes one number for all
        return isinstance(v, (list, tuple)) and all(
            _is_int(x) or (isinstance(x, Ref) and x.sym) or isinstance(x, Unknown) for x in v
        )
    if base == "Scalar":
        return isinstance(v, (int, float)) or (isinstance(v, Ref) and v.sym)
    if base == "float":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if base.startswith("float["):
        return isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) for x in v)
    if base == "bool":
        return isinstance(v, bool) or v in (0, 1)
    if base == "str":
        return isinstance(v, str)
    if base == "ScalarType":
        return _is_int(v) and v in C10_DTYPES
    return not isinstance(v, Ref) or v.sym  # Device, Layout, MemoryFormat: not tensors


def bind(name: str, args: list[Any], kwargs: dict[str, Any]) -> tuple[Schema, dict[str, Any]] | str:
    """The first overload of ``name`` the call fits, with its arguments by name (defaults
    filled in, None left out); else why none fits."""
    overloads = schemas().get(name)
    if overloads is None:
        return "no ATen schema of that name"
    for s in overloads:
        bound = _bind(s, args, kwargs)
        if bound is not None:
            if s.name == "split" and s.overload == "sizes":
                bound["split_sizes"] = bound.pop("split_size")
            if s.name == "to" and "dtype" in bound:
                bound["dtype"] = C10_DTYPES[bound["dtype"]]
            return s, bound
    return f"arguments that fit no overload of aten::{name}"


def _bind(s: Schema, args: list[Any], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    positional = [p for p in s.params if not p.keyword_only]
    if len(args) > len(positional):
        return None
    out: dict[str, Any] = {}
    for p, v in zip(positional, args, strict=False):
        out[p.name] = v
    names = {p.name for p in s.params}
    for k, v in kwargs.items():
        if k not in names or k in out:
            return None
        out[k] = v
    for p in s.params:
        if p.name not in out:
            if not p.has_default:
                return None
            out[p.name] = p.default
        if not _fits(out[p.name], p.type):
            return None
    return {k: v for k, v in out.items() if v is not None}


def out_types(
    s: Schema, args: dict[str, Any], dtype_of: Any, rank_of: Any, count: int | None
) -> list[tuple[str, bool]]:
    """(dtype, symbolic int) of each output; ``count`` outputs for a list result."""
    tensors = [v for v in args.values() if isinstance(v, Ref) and not v.sym]
    first = dtype_of(tensors[0]) if tensors else "float32"
    code = args.get("dtype", args.get("out_dtype"))
    if isinstance(code, str):
        dtype = code
    elif _is_int(code) and code in C10_DTYPES:
        dtype = C10_DTYPES[code]
    elif s.name in _BOOL_OUT:
        dtype = "bool"
    elif s.name in _INT64_OUT:
        dtype = "int64"
    elif s.name in ("to", "type_as") and isinstance(args.get("other"), Ref):
        dtype = dtype_of(args["other"])
    elif s.name in ("arange", "full", "scalar_tensor", "new_full", "full_like"):
        dtype = _scalar_dtype(args, first if s.name in ("new_full", "full_like") else None)
    elif s.name in ("zeros", "ones", "empty"):
        dtype = "float32"
    elif s.name == "embedding":
        dtype = dtype_of(args["weight"])
    elif s.name in ("where", "masked_fill"):
        dtype = dtype_of(args["self"]) if isinstance(args.get("self"), Ref) else first
    elif s.name in ("sum", "prod") and first in ("bool", "uint8", "int8", "int16", "int32"):
        dtype = "int64"
    else:
        dtype = _promote([dtype_of(t) for t in tensors], list(args.values()), rank_of, tensors)
        if s.name in _TRUE_DIV and dtype not in _FLOATS and "rounding_mode" not in args:
            dtype = "float32"
    returns = s.returns
    if returns == ("Tensor[]",):
        return [(dtype, False)] * (count or 0)
    kinds = []
    for k, r in enumerate(returns):
        sym = r in ("int", "SymInt", "float", "bool")
        kinds.append(("int64" if (k == 1 and s.name in ("max", "min", "topk")) else dtype, sym))
    return kinds


def _scalar_dtype(args: dict[str, Any], like: str | None) -> str:
    if like is not None:
        return like
    values = [args.get(k) for k in ("start", "end", "step", "fill_value", "s")]
    if any(isinstance(v, bool) for v in values):
        return "bool"
    return "float32" if any(isinstance(v, float) for v in values) else "int64"


def _promote(dtypes: list[str], values: list[Any], rank_of: Any, refs: list[Ref]) -> str:
    """torch's promotion, roughly: tensors with dimensions decide among themselves (floats
    win, then the widest); a 0-d tensor or a number only lifts integers to float32."""
    if not dtypes:
        return "float32"
    dims = [d for d, r in zip(dtypes, refs, strict=True) if rank_of(r) != 0]
    lead = dims or dtypes
    floats = [d for d in lead if d in _FLOATS]
    if floats:
        return max(floats, key=_FLOATS.index)
    if any(d in _FLOATS for d in dtypes) or any(isinstance(v, float) for v in values):
        return "float32"
    if all(d == "bool" for d in lead):
        return "int64" if any(_is_int(v) for v in values) else "bool"
    ints = [d for d in lead if d != "bool"]
    return ints[0]


_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "floor": math.floor,
    "ceil": math.ceil,
    "abs": abs,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "Int": int,
    "Float": float,
    "Bool": bool,
    "round": round,
}
_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": operator.floordiv,
    "remainder": operator.mod,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "__and__": operator.and_,
    "__or__": operator.or_,
    "__xor__": operator.xor,
    "min": min,
    "max": max,
}


def fold(name: str, args: list[Any]) -> Any:
    """``name`` on plain values (numbers, bools, strings, lists), or NO_FOLD when it takes a
    tensor or a value the walk cannot know. Results are bounded (no 2**10**9)."""
    if any(isinstance(a, (Ref, Unknown)) for a in args):
        return NO_FOLD
    try:
        return _fold(name, args)
    except (ArithmeticError, TypeError, ValueError):
        return NO_FOLD


def _fold(name: str, args: list[Any]) -> Any:
    if name in _ARITH and len(args) == 2:
        a, b = args
        if name == "mul" and isinstance(a, list) and _is_int(b) and len(a) * b > _MAX_ITEMS:
            return NO_FOLD
        if name in ("floordiv", "remainder") and b == 0:
            return NO_FOLD
        return _bounded(_ARITH[name](a, b))
    if len(args) == 2 and all(isinstance(a, (int, float)) for a in args):
        a, b = args
        if name == "div":
            return a / b if b else NO_FOLD
        if name == "div_trunc" and b:
            if not (_is_int(a) and _is_int(b)):
                return float(math.trunc(a / b))
            q = abs(a) // abs(b)
            return q if (a >= 0) == (b > 0) else -q
        if name == "pow" and abs(b) <= 64 and abs(a) < 1 << 32:
            return _bounded(a**b)
    if len(args) == 1 and isinstance(args[0], (int, float)):
        a = args[0]
        if name in _UNARY:
            return _bounded(_UNARY[name](a))
    if name == "len" and len(args) == 1 and isinstance(args[0], (list, tuple, str, dict)):
        return len(args[0])
    if name == "__not__" and len(args) == 1:
        return not args[0]
    return NO_FOLD


def _bounded(v: Any) -> Any:
    if _is_int(v) and not -_MAX_INT <= v < _MAX_INT:
        raise ValueError("an integer beyond int64")
    return v
