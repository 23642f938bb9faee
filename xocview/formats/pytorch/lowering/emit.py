"""What one ATen node's lowering writes: ONNX operators, their constants and the tensors
between them, kept aside until the lowering succeeds (``Emit``).

A lowering reads the node's arguments by their ATen schema names (``e.arg("dim")``), its
tensors as positions in the graph (``e.x("self")``) with their shapes and dtypes, and writes
ONNX nodes with ``e.op``; the last op writes the ATen node's own outputs (``out=e.outs``). A
lowering that cannot map a node raises ``NotMapped`` with the reason, and the node stays an
ATen node that the executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.formats.pytorch.pt2_schema import Ref
from xocview.model import Node, Tensor
from xocview.model.dtypes import DTYPES, numpy_type

__all__ = ["FLOATS", "INTS", "Emit", "NotMapped", "Values"]

FLOATS = frozenset({"float16", "bfloat16", "float32", "double"})
INTS = frozenset({"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"})
_MISSING = object()
# ONNX ops whose output dtype is not their input's.
_OUT_DTYPES = {
    **dict.fromkeys(
        ("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or"),
        "bool",
    ),
    **dict.fromkeys(("Xor", "IsNaN"), "bool"),
    **dict.fromkeys(("Shape", "Size", "ArgMax", "ArgMin", "NonZero"), "int64"),
}


class NotMapped(Exception):
    """This node's arguments have no ONNX form here (the reason says which)."""


class Values:
    """The graph being built as a lowering sees it: tensors by FX name, made on first use."""

    def __init__(self, tensors: list[Tensor], value: Callable[[str], int]) -> None:
        self.tensors = tensors
        self.value = value


class Emit:
    """One ATen node's lowering in progress: ``nodes`` written so far, tensors it made."""

    def __init__(
        self,
        values: Values,
        fx: str,
        args: dict[str, Any],
        outs: list[str | None],
        read: set[str] | frozenset[str] = frozenset(),
    ) -> None:
        self.values, self.fx, self.args = values, fx, args
        self.out_names = outs
        self.read = read  # the values later nodes read or the graph returns
        self.nodes: list[Node] = []
        self._ids: set[str] = set()
        self.bound: set[int] = set()  # ATen outputs the lowering wrote

    # -- reading the ATen node ---------------------------------------------------------------

    def arg(self, name: str, default: Any = _MISSING) -> Any:
        """An argument by its schema name; ``default`` when the file leaves it out or null."""
        value = self.args.get(name)
        if value is None:
            if default is _MISSING:
                raise NotMapped(f"argument {name!r} is missing")
            return default
        return value

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

    def shape(self, t: int) -> list[int]:
        tensor = self.values.tensors[t]
        if tensor.metadata.get("rank_unknown"):
            raise NotMapped(f"the rank of {tensor.id!r} is unknown")
        return list(tensor.shape)

    def rank(self, t: int) -> int:
        return len(self.shape(t))

    def dtype(self, t: int) -> str:
        return self.values.tensors[t].dtype

    def out_dtype(self, k: int = 0) -> str:
        return self.dtype(self.out(k))

    def dim(self, t: int, d: int) -> int:
        """A static size; NotMapped when the size is symbolic."""
        shape = self.shape(t)
        n = shape[d]
        if n < 0:
            raise NotMapped(f"dimension {d} of {self.values.tensors[t].id!r} has no fixed size")
        return n

    # -- writing ------------------------------------------------------------------------------

    def op(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None = None,
        out: Sequence[int] | int = 1,
        dtype: str | None = None,
    ) -> list[int]:
        """Write one ONNX node; returns its outputs (``out`` given, or ``out`` new ones typed
        ``dtype``, by default the first input's)."""
        if isinstance(out, int):
            like = dtype or _OUT_DTYPES.get(op_type) or self._like(op_type, inputs)
            outs = [self.fresh(f"{op_type.lower()}", like) for _ in range(out)]
        else:
            outs = list(out)
        nid = self._id(f"{self.fx}/{op_type}")
        present = [t for t in inputs if t is not None]
        metadata: dict[str, Any] = {}
        if len(present) < len(inputs):
            metadata["omitted_inputs"] = [k for k, t in enumerate(inputs) if t is None]
        self.nodes.append(Node(nid, op_type, present, outs, dict(attrs or {}), metadata))
        return outs

    def _like(self, op_type: str, inputs: Sequence[int | None]) -> str:
        """An op's output dtype when it is its (first data) input's."""
        data = inputs[1:] if op_type == "Where" else inputs
        return next((self.dtype(t) for t in data if t is not None), "undefined")

    def op1(self, op_type: str, inputs: Sequence[int | None], **kw: Any) -> int:
        return self.op(op_type, inputs, **kw)[0]

    def emit(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the node's last op, the one that makes its (first) output."""
        self.op(op_type, inputs, attrs, out=self.outs)

    def const(self, values: Any, dtype: str, label: str) -> int:
        """A small weight tensor holding ``values`` as ``dtype``."""
        np_type = numpy_type(dtype)
        if np_type is None:
            raise NotMapped(f"no constant of type {dtype}")
        data = np.asarray(values, dtype=np_type)
        return self.fresh(label, dtype, list(data.shape), data, "weight")

    def ints(self, items: Sequence[Any], label: str) -> int:
        """A 1-D int64 tensor of ``items`` (ints, and symbolic ints as Refs): a constant, or a
        Concat of constant runs and the symbols' one-element tensors."""
        if all(isinstance(v, int) for v in items):
            return self.const(list(items), "int64", label)
        parts: list[int] = []
        run: list[int] = []
        for v in items:
            if isinstance(v, Ref) and v.sym:
                if run:
                    parts.append(self.const(run, "int64", label))
                    run = []
                parts.append(self.cast(self.values.value(v.name), "int64"))
            elif isinstance(v, int):
                run.append(v)
            else:
                raise NotMapped(f"{label} holds {type(v).__name__}, not integers")
        if run:
            parts.append(self.const(run, "int64", label))
        return self.op1("Concat", parts, attrs={"axis": 0})

    def scalar(self, value: Any, dtype: str, label: str) -> int:
        """A 0-d tensor: a constant, or a symbolic value's one-element tensor made 0-d."""
        if isinstance(value, Ref):
            t = self.cast(self.values.value(value.name), dtype)
            return self.op1("Squeeze", [t])
        return self.const(value, dtype, label)

    def cast(self, t: int, dtype: str) -> int:
        if self.dtype(t) == dtype:
            return t
        return self.op1("Cast", [t], attrs={"to": DTYPES[dtype].onnx_code}, dtype=dtype)

    def fresh(
        self,
        label: str,
        dtype: str,
        shape: list[int] | None = None,
        data: np.ndarray | None = None,
        kind: str = "activation",
    ) -> int:
        """A new tensor of this lowering (``shape`` None: unknown until run)."""
        tensors = self.values.tensors
        tid = self._id(f"{self.fx}/{label}")
        metadata: dict[str, Any] = {} if shape is not None else {"rank_unknown": True}
        tensors.append(Tensor(tid, kind, shape or [], dtype, metadata, data))
        return len(tensors) - 1

    def _id(self, wanted: str) -> str:
        ids = self._ids
        got, k = wanted, 1
        while got in ids:
            k += 1
            got = f"{wanted}_{k}"
        ids.add(got)
        return got
