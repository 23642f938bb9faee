"""What one source op's mapping writes: ONNX nodes, their constants and the tensors between
them, kept aside until the mapping succeeds (``OnnxEmit``).

Every format that runs on the executor (PyTorch, TFLite, Keras, ...) maps its ops onto ONNX
the same way; only how it reads its own op differs, so each format subclasses this with that
reading. A mapping that cannot write an op raises ``NotMapped`` with the reason; the op then
stays in its own domain and the executor refuses it by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.unique_ids import unique
from xocview.model import Node, Tensor
from xocview.model.dtypes import DTYPES, numpy_type

__all__ = [
    "FLOATS",
    "INTS",
    "MISSING",
    "NotMapped",
    "OnnxEmit",
    "PositionalEmit",
    "lookup",
    "placed",
]

FLOATS = frozenset({"float16", "bfloat16", "float32", "double"})
INTS = frozenset({"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"})
MISSING: Any = object()  # a reader's default meaning "required: NotMapped when absent"
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
    """This op has no ONNX form here (the reason says which)."""


def lookup(values: dict[str, Any], key: str, default: Any, what: str) -> Any:
    """``values[key]``; ``default`` when absent or null, NotMapped when there is none."""
    value = values.get(key)
    if value is None:
        if default is MISSING:
            raise NotMapped(f"{what} {key!r} is missing")
        return default
    return value


def placed(
    emitted: list[Node],
    node_id: str,
    op_type: str,
    metadata: dict[str, Any],
    derived: str,
    taken: set[str],
) -> list[Node]:
    """The nodes one source op becomes: its one ONNX node under the op's id, or a group under
    that id holding the ONNX nodes, marked ``derived`` (``aten``, ``tflite``...) so the drawing
    and the first view treat it as the one op it is. ``taken``: the graph's node ids."""
    if len(emitted) == 1:
        leaf = emitted[0]
        leaf.id = node_id
        leaf.metadata = {**metadata, **leaf.metadata}
        return [leaf]
    children = []
    for child in emitted:
        child.id = unique(child.id, taken)
        child.metadata["parent_id"] = node_id
        children.append(child.id)
    group = {**metadata, "children_ids": children, "derived": derived}
    return [Node(node_id, op_type, [], [], {}, group), *emitted]


class OnnxEmit:
    """One op's mapping in progress: ``nodes`` written so far, the tensors it ``made``.

    Ids are ``{node_id}/{label}``, unique within the mapping; the caller renames what clashes
    with the rest of the graph when it keeps the nodes.
    """

    # Give a Transpose of a known shape its permuted shape (TFLite draws weights with sizes).
    known_transposes = False

    def __init__(self, tensors: list[Tensor], node_id: str) -> None:
        self.tensors, self.id = tensors, node_id
        self.nodes: list[Node] = []
        self.made: set[int] = set()
        self._ids: set[str] = set()

    # -- reading tensors -----------------------------------------------------------------------

    def shape(self, t: int) -> list[int]:
        tensor = self.tensors[t]
        if tensor.metadata.get("rank_unknown"):
            raise NotMapped(f"the rank of {tensor.id!r} is unknown")
        return list(tensor.shape)

    def rank(self, t: int) -> int:
        return len(self.shape(t))

    def dim(self, t: int, d: int) -> int:
        """A static size; NotMapped when the size is symbolic."""
        n = self.shape(t)[d]
        if n < 0:
            raise NotMapped(f"dimension {d} of {self.tensors[t].id!r} has no fixed size")
        return n

    def dtype(self, t: int) -> str:
        return self.tensors[t].dtype

    # -- writing -------------------------------------------------------------------------------

    def write(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None = None,
        out: Sequence[int] | int = 1,
        dtype: str | None = None,
    ) -> list[int]:
        """Write one ONNX node (None inputs are omitted ones); returns its outputs: ``out``
        given, or ``out`` new ones typed ``dtype``, by default as ONNX types them."""
        if isinstance(out, int):
            like = dtype or _OUT_DTYPES.get(op_type) or self._like(op_type, inputs)
            shape = self._transposed(op_type, inputs, attrs) if self.known_transposes else None
            outs = [self.fresh(op_type.lower(), like, shape) for _ in range(out)]
        else:
            outs = list(out)
        present = [t for t in inputs if t is not None]
        metadata: dict[str, Any] = {}
        if len(present) < len(inputs):
            metadata["omitted_inputs"] = [k for k, t in enumerate(inputs) if t is None]
        nid = self._id(f"{self.id}/{op_type}")
        self.nodes.append(Node(nid, op_type, present, outs, dict(attrs or {}), metadata))
        return outs

    def op1(self, op_type: str, inputs: Sequence[int | None], **kw: Any) -> int:
        return self.write(op_type, inputs, **kw)[0]

    def _like(self, op_type: str, inputs: Sequence[int | None]) -> str:
        """An op's output dtype when it is its (first data) input's."""
        data = inputs[1:] if op_type == "Where" else inputs
        return next((self.dtype(t) for t in data if t is not None), "undefined")

    def _transposed(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None
    ) -> list[int] | None:
        """A Transpose's output shape when its input's is known."""
        perm = (attrs or {}).get("perm")
        t = inputs[0] if inputs else None
        if op_type != "Transpose" or t is None or self.tensors[t].metadata.get("rank_unknown"):
            return None
        shape = self.tensors[t].shape
        if not isinstance(perm, list) or sorted(perm) != list(range(len(shape))):
            return None
        return [shape[p] for p in perm]

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
        """A new tensor of this mapping (``shape`` None: known when it runs)."""
        metadata: dict[str, Any] = {} if shape is not None else {"rank_unknown": True}
        tid = self._tensor_id(label)
        self.tensors.append(Tensor(tid, kind, shape or [], dtype, metadata, data))
        self.made.add(len(self.tensors) - 1)
        return len(self.tensors) - 1

    def _tensor_id(self, label: str) -> str:
        """A new tensor's id: unique within the mapping (the caller renames clashes)."""
        return self._id(f"{self.id}/{label}")

    def _id(self, wanted: str) -> str:
        return unique(wanted, self._ids)


class PositionalEmit(OnnxEmit):
    """An op whose operands are tensors by position (TFLite, TensorFlow): ``x(k)`` its input,
    ``value(k)`` a constant input's values, ``op`` a node into ``out`` or new tensors. A
    missing optional input is None in ``ins``."""

    def __init__(
        self, tensors: list[Tensor], node_id: str, ins: Sequence[int | None], outs: list[int]
    ) -> None:
        super().__init__(tensors, node_id)
        self.ins: Sequence[int | None] = ins
        self.outs = outs

    def has(self, k: int) -> bool:
        return 0 <= k < len(self.ins) and self.ins[k] is not None

    def x(self, k: int = 0) -> int:
        """The graph position of input ``k``."""
        t = self.ins[k] if self.has(k) else None
        if t is None:
            raise NotMapped(f"input {k} is missing")
        return t

    def root(self, t: int) -> int:
        """The tensor whose values ``t`` has (a format that copies constants says which)."""
        return t

    def value(self, k: int) -> np.ndarray:
        """Input ``k``'s values when it is a constant in the file."""
        tensor = self.tensors[self.root(self.x(k))]
        if tensor.kind != "weight" or not tensor.has_data:
            raise NotMapped(f"input {k} ({tensor.id}) is not a constant")
        try:
            data = tensor.data
        except FormatError as e:
            raise NotMapped(f"input {k} ({tensor.id}) does not read: {e}") from None
        if data is None:
            raise NotMapped(f"input {k} ({tensor.id}) has no values")
        return np.asarray(data)

    def ints(self, k: int) -> list[int]:
        return [int(v) for v in self.value(k).reshape(-1).tolist()]

    def op(
        self,
        op_type: str,
        inputs: Sequence[int | None],
        attrs: dict[str, Any] | None = None,
        out: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> list[int]:
        """Write one ONNX node into ``out``, or into one new tensor."""
        return self.write(op_type, inputs, attrs, 1 if out is None else out, dtype)
