"""TorchScript's builtins and prim ops, and the ATen ops the walk answers itself: sizes
and ranks (``torch.size``, ``torch.dim``, ``len``), list helpers, ``int()`` of a size.

Sizes are numbers when the tensor's shape is known (``torch.size(x, 1)`` of an input traced
at 2x8 is 8), symbolic ints (``sym_size`` nodes) when the rank is and the size is not, and
``Unknown`` otherwise, with a fact an assumption can use (``torch.dim(x)``).
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_exprs import Exprs, dtype_code
from xocview.formats.pytorch.torchscript_ops import NO_FOLD, Unknown, fold
from xocview.formats.pytorch.torchscript_values import Frame, ModuleValue, Raised

__all__ = ["Builtins", "isinstance_of", "text"]

_TYPES: dict[str, type] = {"int": int, "float": float, "bool": bool, "str": str}


class Builtins(Exprs):
    """The calls the walk answers without making ATen nodes (or with one ``sym_size``)."""

    def small(self, v: Any) -> Any:
        """A constant tensor of one value as that number (``CONSTANTS.c0`` added to a size)."""
        if isinstance(v, Ref) and not v.sym:
            t = self.b.tensor(v)
            if t.kind == "weight" and math.prod(t.shape) == 1 and t.has_data and len(t.shape) <= 1:
                data = t.data
                if data is not None and data.dtype.kind in "biuf":
                    return data.reshape(-1)[0].item()
        return v

    def size_of(self, x: Ref, d: Any) -> Any:
        rank = self.b.rank(x)
        if rank is None or not isinstance(d, int) or not -rank <= d < rank:
            return Unknown(f"size {d} of {x.name}", ("size", x, d))
        return self.b.tensor(x).shape[d]

    def _op_size(self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST) -> Any:
        x = args[0] if args else None
        if not isinstance(x, Ref) or x.sym:
            return self.torch_op("len", args, kwargs, frame, node) if x is not None else None
        rank = self.b.rank(x)
        if len(args) == 1:
            if rank is None:
                return Unknown(f"the shape of {x.name}", ("size", x))
            return [self._dim_size(x, d, frame, node) for d in range(rank)]
        return self._dim_size(x, args[1], frame, node)

    def _dim_size(self, x: Ref, d: Any, frame: Frame, node: ast.AST) -> Any:
        n = self.size_of(x, d)
        if isinstance(n, int) and n >= 0:
            return n
        meta = {"source": frame.code.place(node), "target": "aten::size.int"}
        args = {"self": x, "dim": d}
        return self.b.aten(
            "sym_size", "sym_size", "int", args, [("int64", True)], frame.group, meta
        )[0]

    def _op_dim(self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST) -> Any:
        x = args[0]
        if not isinstance(x, Ref):
            return Unknown("a rank")
        rank = self.b.rank(x)
        return rank if rank is not None else Unknown(f"torch.dim({x.name})", ("dim", x))

    def _op_len(self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST) -> Any:
        x = args[0] if args else None
        if isinstance(x, Ref) and not x.sym:
            return self._dim_size(x, 0, frame, node)
        if isinstance(x, (list, tuple, str, dict)):
            return len(x)
        return Unknown("a length")

    def _op_format(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        return str(args[0])[:200] if args else ""

    def _op_is_floating_point(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        x = args[0] if args else None
        if isinstance(x, Ref) and not x.sym:
            return self.b.tensor(x).dtype in ("float16", "bfloat16", "float32", "double")
        return Unknown("is_floating_point")

    def _op_device(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        return str(args[0])[:40] if args else "cpu"

    def _op_warn(self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST) -> Any:
        return None

    def _op_append(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        if len(args) == 2 and isinstance(args[0], list) and len(args[0]) < 1 << 20:
            args[0].append(args[1])
            return args[0]
        raise self.err(frame, node, "an append to something that is not a list")

    def _op_list(self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST) -> Any:
        return list(args[0]) if args and isinstance(args[0], (list, tuple)) else Unknown("a list")

    def _op___range_length(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        lo, hi, step = args
        if all(isinstance(v, int) for v in args) and step:
            return max(0, -(-(hi - lo) // step)) if step > 0 else max(0, -(-(lo - hi) // -step))
        return Unknown("a range length")

    def _op___derive_index(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        i, start, step = args
        if all(isinstance(v, int) for v in args):
            return start + i * step
        return Unknown("a loop index")

    def _op___is__(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        return (args[0] is None) == (args[1] is None) if None in args else Unknown("is")

    def _op___isnot__(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        got = self._op___is__(args, kwargs, frame, node)
        return got if isinstance(got, Unknown) else not got

    def _op_numel(
        self, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        x = args[0]
        shape = self._op_size([x], {}, frame, node)
        if isinstance(shape, list) and all(isinstance(n, int) for n in shape):
            return math.prod(shape)
        return Unknown(f"numel of {x.name}")

    # -- prim ops and builtins ----------------------------------------------------------------

    def prim(
        self, name: str, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        if name == "RaiseException":
            raise Raised(text(args[0]) if args else "an exception", frame.code.place(node))
        if name in ("NumToTensor", "unchecked_unwrap_optional", "data", "unchecked_cast"):
            return args[0]
        if name == "device":
            return "cpu"
        if name == "dtype" and isinstance(args[0], Ref):
            return dtype_code(self.b.tensor(args[0]).dtype)
        if name in ("is_cuda", "is_quantized", "is_meta", "requires_grad"):
            return False
        if name in ("min", "max"):
            return self.builtin(name, args, kwargs, frame, node)
        if name == "shape":
            return self._op_size(args[:1], {}, frame, node)
        if name == "TupleIndex":
            return self.subscript_value(args[0], args[1])
        raise self.err(frame, node, f"ops.prim.{name[:60]}, which xocview does not follow")

    def subscript_value(self, base: Any, key: Any) -> Any:
        if (
            isinstance(base, (list, tuple))
            and isinstance(key, int)
            and -len(base) <= key < len(base)
        ):
            return base[key]
        return Unknown("an item")

    def builtin(
        self, name: str, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        if name in ("int", "float", "bool"):
            v = args[0] if args else 0
            if isinstance(v, Ref):
                if v.sym:
                    return v
                fixed = self.small(v)
                if not isinstance(fixed, Ref):
                    return _TYPES[name](fixed)
                return self.torch_op(name.capitalize(), [v], {}, frame, node)
            got = fold(name.capitalize(), [v])
            return got if got is not NO_FOLD else Unknown(f"{name}()")
        if name in ("len", "min", "max", "abs", "round"):
            got = fold(name, args if name != "max" or len(args) != 1 else list(args[0]))
            if (
                got is NO_FOLD
                and name in ("min", "max")
                and len(args) == 1
                and isinstance(args[0], list)
            ):
                got = fold(name, list(args[0])) if len(args[0]) == 2 else NO_FOLD
            return got if got is not NO_FOLD else Unknown(f"{name}()")
        if name == "range":
            if args and all(isinstance(a, int) and not isinstance(a, bool) for a in args):
                return range(*args)
            return Unknown("a range of unknown length")
        if name == "getattr" and len(args) >= 2 and isinstance(args[1], str):
            return self.attribute(args[0], args[1], frame, node)
        if name == "hasattr" and len(args) == 2 and isinstance(args[0], ModuleValue):
            return args[1] in args[0].state() or args[1] in args[0].assigned
        if name in ("list", "tuple"):
            items = args[0] if args else []
            if isinstance(items, (list, tuple, range)):
                return list(items) if name == "list" else tuple(items)
            return Unknown(name)
        if name == "str":
            return (
                str(args[0])[:200] if args and not isinstance(args[0], Ref) else Unknown("a string")
            )
        if name == "print":
            return None
        raise self.err(frame, node, f"a call of {name}() that xocview does not follow")


def isinstance_of(value: Any, kind: ast.expr) -> Any:
    """``isinstance(x, T)`` from the value's kind; T as written (never evaluated)."""
    if isinstance(kind, ast.Tuple):
        answers = [isinstance_of(value, k) for k in kind.elts]
        if any(a is True for a in answers):
            return True
        return False if all(a is False for a in answers) else Unknown("isinstance")
    base = kind.value if isinstance(kind, ast.Subscript) else kind
    name = (
        base.id
        if isinstance(base, ast.Name)
        else base.attr
        if isinstance(base, ast.Attribute)
        else ""
    )
    if isinstance(value, Unknown):
        return Unknown("isinstance")
    if name == "Tensor":
        return isinstance(value, Ref) and not value.sym
    if name in _TYPES:
        return (
            isinstance(value, _TYPES[name]) and not (name == "int" and isinstance(value, bool))
        ) or (name == "int" and isinstance(value, Ref) and value.sym)
    if name == "List":
        return isinstance(value, list)
    if name == "Tuple":
        return isinstance(value, tuple)
    if name in ("Optional", "NoneType"):
        return value is None if name == "NoneType" else Unknown("isinstance")
    return Unknown("isinstance")


def text(v: Any) -> str:
    if isinstance(v, Unknown):
        return v.text
    if isinstance(v, Ref):
        return v.name
    return repr(v)[:60]
