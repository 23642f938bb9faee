"""TorchScript expressions evaluated symbolically: names, attributes, calls, literals,
subscripts and operators on the walk's values (see ``torchscript_values``).

Nothing is executed: a call of ``torch.<op>`` or ``ops.aten.<op>`` becomes an ATen node (or
is folded when its arguments are plain numbers), ``self.<name>`` reads data.pkl's module
object, ``CONSTANTS.cN`` constants.pkl, and a name the code did not bind and that is not one
of TorchScript's builtins is refused (``__import__``, ``exec`` ...) at its file and line.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from xocview.errors import FormatError, shorten
from xocview.formats.pytorch.pt2_schema import Ref
from xocview.formats.pytorch.torchscript_code import Code, strip_mangling
from xocview.formats.pytorch.torchscript_graph import Builder
from xocview.formats.pytorch.torchscript_ops import C10_DTYPES, Unknown
from xocview.formats.pytorch.torchscript_pickles import Pickles
from xocview.formats.pytorch.torchscript_values import (
    BUILTINS,
    Builtin,
    Frame,
    Method,
    ModuleValue,
    Namespace,
)
from xocview.formats.pytorch.unpickle import ObjectRecord, TensorRecord

__all__ = ["MAX_STEPS", "Exprs"]

# Statements and expressions walked, an ATen call counting ATEN_STEPS: a loop of 10**9 turns
# stops here (in about a second), and a loop making nodes after 50,000 of them.
MAX_STEPS = 1_000_000
ATEN_STEPS = 20
_ROOTS = ("torch", "ops", "__torch__", "CONSTANTS", "math")
_COMPARE = {
    ast.Eq: "eq",
    ast.NotEq: "ne",
    ast.Lt: "lt",
    ast.LtE: "le",
    ast.Gt: "gt",
    ast.GtE: "ge",
}
_BINOPS = {
    ast.Add: "add",
    ast.Sub: "sub",
    ast.Mult: "mul",
    ast.Div: "div",
    ast.FloorDiv: "floordiv",
    ast.Mod: "remainder",
    ast.Pow: "pow",
    ast.BitAnd: "__and__",
    ast.BitOr: "__or__",
    ast.BitXor: "__xor__",
}
_C10_CODES = {v: k for k, v in C10_DTYPES.items()}


class Exprs:
    """The expression half of the walk; ``Walker`` adds statements and calls."""

    def __init__(self, b: Builder, code: Code, pickles: Pickles, file: str) -> None:
        self.b, self.code, self.pickles, self.file = b, code, pickles, file
        self.steps = 0

    # -- errors -------------------------------------------------------------------------------

    def err(self, frame: Frame, at: ast.AST | None, problem: str, expected: str | None = None):
        return FormatError(self.file, frame.code.place(at), problem, expected)

    def tick(self, frame: Frame, at: ast.AST, cost: int = 1) -> None:
        self.steps += cost
        if self.steps > MAX_STEPS:
            raise self.err(
                frame,
                at,
                f"the code takes more than {MAX_STEPS:,} steps to walk",
                "code whose loops have a bounded number of turns",
            )

    # -- expressions ---------------------------------------------------------------------------

    def eval(self, node: ast.expr, frame: Frame) -> Any:
        self.tick(frame, node)
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bytes, type(...))):
                raise self.err(frame, node, "a bytes or Ellipsis literal", "TorchScript values")
            return node.value
        if isinstance(node, ast.Name):
            return self.name(node, frame)
        if isinstance(node, ast.Attribute):
            return self.attribute(self.eval(node.value, frame), node.attr, frame, node)
        if isinstance(node, ast.Call):
            return self.call(node, frame)  # type: ignore[attr-defined]
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.eval(e, frame) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            keys = [self.eval(k, frame) if k is not None else None for k in node.keys]
            return dict(zip(keys, [self.eval(v, frame) for v in node.values], strict=True))
        if isinstance(node, ast.Subscript):
            return self.subscript(self.eval(node.value, frame), node.slice, frame)
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            args = [self.eval(node.left, frame), self.eval(node.right, frame)]
            return self.torch_op(_BINOPS[type(node.op)], args, {}, frame, node)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, frame)
        if isinstance(node, ast.BoolOp):
            return self.boolop(node, frame)
        if isinstance(node, ast.Compare):
            return self.compare(node, frame)
        if isinstance(node, ast.IfExp):
            cond = truth(self.eval(node.test, frame))
            if cond is None:
                return Unknown(f"if-expression at {frame.code.place(node)}")
            return self.eval(node.body if cond else node.orelse, frame)
        raise self.err(
            frame, node, f"a {type(node).__name__} expression, which TorchScript does not write"
        )

    def name(self, node: ast.Name, frame: Frame) -> Any:
        if node.id in frame.env:
            return frame.env[node.id]
        if node.id in ("inf", "nan"):
            return float(node.id)
        if node.id in _ROOTS:
            return Namespace(node.id)
        if node.id in BUILTINS:
            return Builtin(node.id)
        if node.id in ("Tensor", "number", "NoneType", "Optional", "List", "Tuple", "Dict"):
            return Namespace(f"type.{node.id}")
        raise self.err(
            frame,
            node,
            f"the name {shorten(node.id)!r} is not defined",
            "names the code binds, torch, ops and TorchScript's builtins",
        )

    def attribute(self, base: Any, attr: str, frame: Frame, node: ast.AST) -> Any:
        if isinstance(base, ModuleValue):
            if base.cls is not None and attr in base.cls.methods:
                return Method(base, attr)
            return self.member(base, attr, frame, node)
        if isinstance(base, Namespace):
            if base.path == "CONSTANTS":
                return self.constant(attr, frame, node)
            return Namespace(f"{base.path}.{attr}")
        if isinstance(base, Ref):
            return Method(base, attr)
        if isinstance(base, Unknown):
            return Unknown(f"{base.text}.{attr}")
        raise self.err(frame, node, f"an attribute {shorten(attr)!r} of a plain value")

    def member(self, module: ModuleValue, attr: str, frame: Frame, node: ast.AST) -> Any:
        """``self.<attr>``: set by the code, in the pickled state, or a class constant."""
        if attr in module.assigned:
            return module.assigned[attr]
        state = module.state()
        path = f"{module.path}.{attr}" if module.path else attr
        if attr in state:
            return self.from_state(state[attr], path, module, frame, node)
        if module.cls is not None and attr in module.cls.finals:
            return module.cls.finals[attr]
        raise self.err(
            frame,
            node,
            f"{strip_mangling(module.qualname)} has no attribute {shorten(attr)!r}",
            "attributes data.pkl holds for the module",
        )

    def from_state(
        self, value: Any, path: str, owner: ModuleValue | None, frame: Frame, node: ast.AST
    ) -> Any:
        """A pickled value as the walk's: tensors as weights, objects as modules."""
        if isinstance(value, TensorRecord):
            kind = "buffer"
            if owner is not None and owner.cls is not None:
                leaf = path.rpartition(".")[2]
                kind = "parameter" if leaf in owner.cls.parameters else "buffer"
            return self.b.weight(path, value, kind, frame.code.place(node))
        if isinstance(value, ObjectRecord):
            return ModuleValue(value, self.code.classes.get(type(value).qualname), path)
        if isinstance(value, (list, tuple)):
            items = [
                self.from_state(v, f"{path}.{k}", None, frame, node) for k, v in enumerate(value)
            ]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, dict):
            return {
                k: self.from_state(v, f"{path}.{k}", None, frame, node) for k, v in value.items()
            }
        if value is None or isinstance(value, (bool, int, float, str, complex)):
            return value
        return Unknown(f"{path} ({type(value).__name__})")

    def constant(self, attr: str, frame: Frame, node: ast.AST) -> Any:
        consts = self.pickles.constants
        if not (attr.startswith("c") and attr[1:].isdigit() and int(attr[1:]) < len(consts)):
            raise self.err(
                frame,
                node,
                f"CONSTANTS.{shorten(attr)} is not in constants.pkl",
                f"c0 .. c{len(consts) - 1}" if consts else "no constants",
            )
        value = consts[int(attr[1:])]
        if isinstance(value, TensorRecord):
            return self.b.weight(f"CONSTANTS.{attr}", value, "constant", frame.code.place(node))
        return self.from_state(value, f"CONSTANTS.{attr}", None, frame, node)

    def subscript(self, base: Any, index: ast.expr, frame: Frame) -> Any:
        if isinstance(index, ast.Slice):
            parts = [
                self.eval(p, frame) if p is not None else None
                for p in (index.lower, index.upper, index.step)
            ]
            if isinstance(base, (list, tuple, str)) and all(
                p is None or isinstance(p, int) for p in parts
            ):
                return base[slice(*parts)]
            return Unknown("a slice")
        key = self.eval(index, frame)
        if (
            isinstance(base, (list, tuple, str))
            and isinstance(key, int)
            and -len(base) <= key < len(base)
        ):
            return base[key]
        if isinstance(base, dict) and not isinstance(key, (list, dict)) and key in base:
            return base[key]
        if isinstance(base, (Unknown, Ref)) or isinstance(key, (Unknown, Ref)):
            return Unknown("an item")
        raise self.err(frame, index, "an index outside the list or a missing key")

    def unary(self, node: ast.UnaryOp, frame: Frame) -> Any:
        v = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            t = truth(v)
            return Unknown("not") if t is None else not t
        if isinstance(node.op, ast.USub):
            return self.torch_op("neg", [v], {}, frame, node)
        if isinstance(node.op, ast.UAdd):
            return v
        return self.torch_op("bitwise_not", [v], {}, frame, node)

    def boolop(self, node: ast.BoolOp, frame: Frame) -> Any:
        last: Any = None
        for e in node.values:
            last = self.eval(e, frame)
            t = truth(last)
            if t is None:
                return Unknown("and/or")
            if isinstance(node.op, ast.And) and not t:
                return last
            if isinstance(node.op, ast.Or) and t:
                return last
        return last

    def compare(self, node: ast.Compare, frame: Frame) -> Any:
        left = self.eval(node.left, frame)
        result: Any = True
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.eval(right_node, frame)
            if isinstance(op, (ast.Is, ast.IsNot)):
                got = identity(left, right)
                if got is not None and isinstance(op, ast.IsNot):
                    got = not got
            elif isinstance(op, (ast.In, ast.NotIn)):
                got = None
                if isinstance(right, (list, tuple, dict, str)) and not isinstance(
                    left, (Ref, Unknown)
                ):
                    got = (left in right) != isinstance(op, ast.NotIn)
            else:
                got = self.torch_op(_COMPARE[type(op)], [left, right], {}, frame, node)
            if got is None:
                return Unknown("a comparison")
            if isinstance(got, (Ref, Unknown)):
                return got
            if not got:
                return False
            left = right
        return result

    def torch_op(
        self, name: str, args: list[Any], kwargs: dict[str, Any], frame: Frame, node: ast.AST
    ) -> Any:
        raise NotImplementedError  # the Walker's


def truth(v: Any) -> bool | None:
    """A value as a condition, None when it cannot be known."""
    if isinstance(v, (Ref, Unknown, Namespace, Builtin, Method)):
        return None
    if isinstance(v, ModuleValue):
        return True
    try:
        return bool(v)
    except (TypeError, ValueError):
        return None


def identity(a: Any, b: Any) -> bool | None:
    """``a is b`` as TorchScript means it (almost always ``x is None``)."""
    if a is None or b is None:
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return None
        return a is b
    if isinstance(a, Ref) and isinstance(b, Ref):
        return a == b
    return None


def dtype_code(dtype: str) -> int | Unknown:
    return _C10_CODES.get(dtype, Unknown(f"dtype {dtype}"))


def is_finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)
