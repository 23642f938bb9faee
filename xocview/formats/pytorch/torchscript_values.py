"""What names in TorchScript code stand for during the walk, besides tensors (``Ref``), plain
numbers, strings, lists and ``Unknown``: module objects of data.pkl, namespaces such as
``torch`` or ``__torch__.torch.nn.functional``, builtins, bound methods, and the frame a
function body runs in. A ``Flow`` exception carries a ``return``, ``break`` or ``continue``
out of the statements it ends, and ``Raised`` a reached ``RaiseException``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from xocview.formats.pytorch.torchscript_code import ClassCode, FunctionCode
from xocview.formats.pytorch.unpickle import ObjectRecord

__all__ = [
    "Builtin",
    "Flow",
    "Frame",
    "Method",
    "ModuleValue",
    "Namespace",
    "Raised",
    "assigned_names",
    "raises",
]

BUILTINS = frozenset(
    {"int", "float", "bool", "str", "len", "range", "min", "max", "abs", "print", "round"}
    | {"isinstance", "getattr", "hasattr", "annotate", "unchecked_cast", "uninitialized"}
    | {"list", "tuple"}
)


@dataclass
class ModuleValue:
    """One object of data.pkl (a module): its record, its class's code, its path from the
    top module (``layer1.0.conv1``, '' for the top) and attributes the code set."""

    record: ObjectRecord
    cls: ClassCode | None
    path: str
    assigned: dict[str, Any] = field(default_factory=dict)

    @property
    def qualname(self) -> str:
        return type(self.record).qualname or "?"

    def state(self) -> dict[str, Any]:
        st = self.record.state
        return st if isinstance(st, dict) else {}


@dataclass(frozen=True)
class Namespace:
    """A dotted prefix that is not a value yet: ``torch``, ``ops.prim``, ``__torch__.x``."""

    path: str


@dataclass(frozen=True)
class Builtin:
    name: str


@dataclass(frozen=True)
class Method:
    """``target.name`` before it is called: a module's method or a tensor's."""

    target: Any
    name: str


@dataclass
class Frame:
    """One function body being walked: its names, code, module (``self``), the group its
    nodes go in and how deep in calls it is."""

    env: dict[str, Any]
    code: FunctionCode
    module: ModuleValue | None
    group: str | None
    depth: int


class Flow(Exception):
    """``return`` (with its value), ``break`` or ``continue`` leaving a block."""

    def __init__(self, kind: str, value: Any = None) -> None:
        super().__init__(kind)
        self.kind, self.value = kind, value


class Raised(Exception):
    """The walk reached ``ops.prim.RaiseException`` (or ``raise``) on a path it decided."""

    def __init__(self, message: str, place: str) -> None:
        super().__init__(message)
        self.message, self.place = message, place


def raises(block: list[ast.stmt]) -> bool:
    """Whether a block always ends in an exception: a statement of it, at its own level,
    is ``raise`` or a call of ``ops.prim.RaiseException``."""
    for stmt in block:
        if isinstance(stmt, ast.Raise):
            return True
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            f = stmt.value.func
            if isinstance(f, ast.Attribute) and f.attr == "RaiseException":
                return True
    return False


def assigned_names(block: list[ast.stmt]) -> list[str]:
    """The names a block assigns anywhere in it, in order of first assignment."""
    found: dict[str, None] = {}
    for stmt in block:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)):
                targets = [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        found.setdefault(n.id, None)
    return list(found)


def read_names(block: list[ast.stmt] | list[ast.expr]) -> list[str]:
    found: dict[str, None] = {}
    for stmt in block:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                found.setdefault(n.id, None)
    return list(found)
