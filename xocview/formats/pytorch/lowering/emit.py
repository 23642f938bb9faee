"""What one ATen node's lowering writes (``Emit``): the shared ONNX emitter reading the node's
arguments by their ATen schema names.

A lowering reads arguments by name (``e.arg("dim")``), its tensors as positions in the graph
(``e.x("self")``) with their shapes and dtypes, and writes ONNX nodes with ``e.op``; the last
op writes the ATen node's own outputs (``out=e.outs``). A lowering that cannot map a node
raises ``NotMapped`` with the reason, and the node stays an ATen node that the executor
refuses by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from xocview.formats.onnx_emit import FLOATS, INTS, MISSING, NotMapped, OnnxEmit, lookup
from xocview.formats.pytorch.pt2_schema import Ref
from xocview.model import Tensor

__all__ = ["FLOATS", "INTS", "Emit", "NotMapped", "Values"]


class Values:
    """The graph being built as a lowering sees it: tensors by FX name, made on first use."""

    def __init__(self, tensors: list[Tensor], value: Callable[[str], int]) -> None:
        self.tensors = tensors
        self.value = value


class Emit(OnnxEmit):
    """One ATen node's lowering in progress; ``bound`` the outputs it wrote."""

    op = OnnxEmit.write

    def __init__(
        self,
        values: Values,
        fx: str,
        args: dict[str, Any],
        outs: list[str | None],
        read: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(values.tensors, fx)
        self.values, self.fx, self.args = values, fx, args
        self.out_names = outs
        self.read = read  # the values later nodes read or the graph returns
        self.bound: set[int] = set()

    def arg(self, name: str, default: Any = MISSING) -> Any:
        """An argument by its schema name; ``default`` when the file leaves it out or null."""
        return lookup(self.args, name, default, "argument")

    def has(self, name: str) -> bool:
        return self.args.get(name) is not None

    def x(self, name: str = "self") -> int:
        """The graph position of a tensor argument."""
        ref = self.arg(name)
        if not isinstance(ref, Ref) or ref.sym:
            raise NotMapped(f"argument {name!r} is not a tensor")
        return self.values.value(ref.name)

    def xs(self, name: str) -> list[int]:
        refs = self.arg(name)
        if not isinstance(refs, list) or not all(isinstance(r, Ref) for r in refs):
            raise NotMapped(f"argument {name!r} is not a list of tensors")
        return [self.values.value(r.name) for r in refs]

    def out(self, k: int = 0) -> int:
        """The graph position of the ATen node's ``k``-th output."""
        if k >= len(self.out_names) or self.out_names[k] is None:
            raise NotMapped(f"output {k} is not in the file")
        t = self.values.value(str(self.out_names[k]))
        self.bound.add(k)
        return t

    def used(self, k: int) -> bool:
        """Whether output ``k`` is read by a later node or returned by the graph."""
        return k < len(self.out_names) and self.out_names[k] in self.read

    @property
    def outs(self) -> list[int]:
        return [self.out(0)]

    def out_dtype(self, k: int = 0) -> str:
        return self.dtype(self.out(k))

    def emit(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the node's last op, the one that makes its (first) output."""
        self.op(op_type, inputs, attrs, out=self.outs)

    def ints(self, items: Sequence[Any], label: str) -> int:
        """A 1-D int64 tensor of ``items`` (ints, and symbolic ints as Refs): a constant, or a
        Concat of constant runs and the symbols' one-element tensors."""
        if all(isinstance(v, int) for v in items):
            return self.i64(list(items), label)
        parts: list[int] = []
        run: list[int] = []
        for v in items:
            if isinstance(v, Ref) and v.sym:
                if run:
                    parts.append(self.i64(run, label))
                    run = []
                parts.append(self.cast(self.values.value(v.name), "int64"))
            elif isinstance(v, int):
                run.append(v)
            else:
                raise NotMapped(f"{label} holds {type(v).__name__}, not integers")
        if run:
            parts.append(self.i64(run, label))
        return self.op1("Concat", parts, attrs={"axis": 0})

    def scalar(self, value: Any, dtype: str, label: str) -> int:
        """A 0-d tensor: a constant, or a symbolic value's one-element tensor made 0-d."""
        if isinstance(value, Ref):
            t = self.cast(self.values.value(value.name), dtype)
            return self.op1("Squeeze", [t])
        return self.const(value, dtype, label)
