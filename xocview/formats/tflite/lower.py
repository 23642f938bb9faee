"""What one TFLite operator's mapping writes: ONNX nodes, their constants and the tensors
between them, kept aside until the mapping succeeds (``Lower``).

A mapping reads the operator's inputs by position (``e.x(1)``, ``e.value(1)`` for a constant's
values), its options by field name (``e.opt("stride_h")``), and writes ONNX nodes with
``e.op``; ``e.last`` writes the op that makes the operator's output, followed by the fused
activation when the options name one. A mapping that cannot write an operator raises
``NotMapped`` with the reason; the operator then stays a ``tflite`` node that the executor
refuses by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xocview.model import Node, Tensor
from xocview.model.dtypes import numpy_type

__all__ = ["FLOATS", "Lower", "NotMapped"]

FLOATS = frozenset({"float16", "bfloat16", "float32", "double"})
_MISSING = object()


class NotMapped(Exception):
    """This operator has no ONNX form here (the reason says which)."""


class Lower:
    """One operator's mapping in progress: ``nodes`` written so far, tensors it made."""

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        ins: list[int | None],
        outs: list[int],
        options: dict[str, Any],
    ) -> None:
        self.tensors, self.id, self.ins, self.outs = tensors, node_id, ins, outs
        self.options = options
        self.nodes: list[Node] = []
        self._ids: set[str] = set()

    # -- reading the operator ----------------------------------------------------------------

    def opt(self, name: str, default: Any = _MISSING) -> Any:
        value = self.options.get(name)
        if value is None:
            if default is _MISSING:
                raise NotMapped(f"option {name!r} is missing")
            return default
        return value

    def has(self, k: int) -> bool:
        return k < len(self.ins) and self.ins[k] is not None

    def x(self, k: int = 0) -> int:
        """The graph position of input ``k``."""
        if not self.has(k):
            raise NotMapped(f"input {k} is missing")
        t = self.ins[k]
        assert t is not None
        return t

    def value(self, k: int) -> np.ndarray:
        """Input ``k``'s values when it is a constant in the file."""
        tensor = self.tensors[self.x(k)]
        if not tensor.has_data or tensor.kind != "weight":
            raise NotMapped(f"input {k} ({tensor.id}) is not a constant")
        data = tensor.data
        if data is None:
            raise NotMapped(f"input {k} ({tensor.id}) has no values")
        return np.asarray(data)

    def ints(self, k: int) -> list[int]:
        return [int(v) for v in self.value(k).reshape(-1).tolist()]

    def shape(self, t: int) -> list[int]:
        tensor = self.tensors[t]
        if tensor.metadata.get("rank_unknown"):
            raise NotMapped(f"the rank of {tensor.id!r} is unknown")
        return list(tensor.shape)

    def rank(self, t: int) -> int:
        return len(self.shape(t))

    def dim(self, t: int, d: int) -> int:
        n = self.shape(t)[d]
        if n < 0:
            raise NotMapped(f"dimension {d} of {self.tensors[t].id!r} has no fixed size")
        return n

    def dtype(self, t: int) -> str:
        return self.tensors[t].dtype

    # -- writing -----------------------------------------------------------------------------

    def op(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None = None,
        out: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> list[int]:
        """Write one ONNX node; its outputs are ``out``, or one new tensor typed ``dtype``
        (by default its first input's)."""
        if out is None:
            first = next((t for t in inputs if t is not None), None)
            like = dtype or (self.dtype(first) if first is not None else "float32")
            out = [self.fresh(op_type.lower(), like, self._transposed(op_type, inputs, attrs))]
        present = [t for t in inputs if t is not None]
        metadata: dict[str, Any] = {}
        if len(present) < len(inputs):
            metadata["omitted_inputs"] = [k for k, t in enumerate(inputs) if t is None]
        nid = self._id(f"{self.id}/{op_type}")
        self.nodes.append(Node(nid, op_type, present, list(out), dict(attrs or {}), metadata))
        return list(out)

    def _transposed(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None
    ) -> list[int] | None:
        """A Transpose's output shape when its input's is known (weights drawn with sizes)."""
        perm = (attrs or {}).get("perm")
        t = inputs[0] if inputs else None
        if op_type != "Transpose" or t is None or self.tensors[t].metadata.get("rank_unknown"):
            return None
        shape = self.tensors[t].shape
        if not isinstance(perm, list) or sorted(perm) != list(range(len(shape))):
            return None
        return [shape[p] for p in perm]

    def op1(self, op_type: str, inputs: Sequence[int | None], **kw: Any) -> int:
        return self.op(op_type, inputs, **kw)[0]

    def last(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the op that makes output 0, then the fused activation if there is one."""
        act = self.options.get("fused_activation_function", "NONE")
        if act in ("NONE", 0, None):
            self.op(op_type, inputs, attrs, out=[self.outs[0]])
            return
        self.activation(self.op1(op_type, inputs, attrs=attrs), str(act), self.outs[0])

    def activation(self, t: int, act: str, out: int) -> None:
        """``act`` (an ActivationFunctionType name) of ``t`` written into ``out``."""
        if act == "RELU":
            self.op("Relu", [t], out=[out])
        elif act in ("RELU6", "RELU_N1_TO_1"):
            low = 0.0 if act == "RELU6" else -1.0
            high = 6.0 if act == "RELU6" else 1.0
            dt = self.dtype(t)
            self.op("Clip", [t, self.const(low, dt, "min"), self.const(high, dt, "max")], out=[out])
        elif act == "TANH":
            self.op("Tanh", [t], out=[out])
        else:
            raise NotMapped(f"fused activation {act} has no ONNX form here")

    def const(self, values: Any, dtype: str, label: str) -> int:
        """A small weight tensor holding ``values`` as ``dtype``."""
        np_type = numpy_type(dtype)
        if np_type is None:
            raise NotMapped(f"no constant of type {dtype}")
        try:
            data = np.asarray(values, dtype=np_type)
        except (OverflowError, ValueError) as e:
            raise NotMapped(f"{label} {values!r} does not fit {dtype}") from e
        return self.fresh(label, dtype, list(data.shape), data, "weight")

    def i64(self, values: Sequence[int], label: str) -> int:
        return self.const(list(values), "int64", label)

    def fresh(
        self,
        label: str,
        dtype: str,
        shape: list[int] | None = None,
        data: np.ndarray | None = None,
        kind: str = "activation",
    ) -> int:
        """A new tensor of this mapping (``shape`` None: known when it runs)."""
        metadata: dict[str, Any] = {} if shape is not None else {"rank_unknown": True}
        tid = self._id(f"{self.id}/{label}")
        self.tensors.append(Tensor(tid, kind, shape or [], dtype, metadata, data))
        return len(self.tensors) - 1

    def _id(self, wanted: str) -> str:
        got, k = wanted, 1
        while got in self._ids:
            k += 1
            got = f"{wanted}_{k}"
        self._ids.add(got)
        return got
