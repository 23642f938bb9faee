"""Values of the small integer tensors that decide shapes (a Reshape's target, a Slice's ends).

ONNX infers a Reshape's output only when it is told the shape input's values. Exporters often
compute them from other shapes (Shape -> Gather -> Concat -> Reshape), and full inference
follows those values (``data_prop``); per-node inference must be handed them. This evaluates
the few ops such chains use, with numpy on arrays of at most ``SMALL`` elements, for one state
of the graph: a value that depends on a size nobody knows is None.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.model.attribute_tensor import AttributeTensor
from xocview.model.dtypes import dtype_by_onnx_code, numpy_type
from xocview.model.graph import Graph, Node

__all__ = ["SMALL", "VALUE_OPS", "SmallValues", "feeds_data"]

SMALL = 64  # elements: shape-like tensors; more is data, not a shape
MAX_DEPTH = 48  # producers followed upstream for one value
_INTEGERS = frozenset(
    {"int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8", "bool"}
)
# Float inputs whose values inference reads: Resize's and Upsample's scales.
_FLOAT_DATA_OPS = frozenset({"Resize", "Upsample"})

Op = Callable[[list[np.ndarray], dict[str, Any]], np.ndarray]


def feeds_data(op_type: str, dtype: str) -> bool:
    """Whether an input of this dtype can decide ``op_type``'s output shape by its values:
    integer inputs (shapes, axes, pads, repeats) and Resize's scales; not weights."""
    return dtype in _INTEGERS or (op_type in _FLOAT_DATA_OPS and dtype == "float32")


def _axes(node_attrs: dict[str, Any], ins: list[np.ndarray], rank: int) -> list[int]:
    axes = ins[1].tolist() if len(ins) > 1 else node_attrs.get("axes", [])
    return sorted(int(a) % rank for a in axes) if rank else []


def _unsqueeze(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    axes = ins[1].tolist() if len(ins) > 1 else a.get("axes", [])
    rank = x.ndim + len(axes)
    return np.expand_dims(x, tuple(sorted(int(k) % rank for k in axes)))


def _squeeze(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    axes = _axes(a, ins, ins[0].ndim)
    return np.squeeze(ins[0], tuple(axes)) if axes else np.squeeze(ins[0])


def _slice(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    x = ins[0]
    if len(ins) > 1:
        starts, ends = ins[1].tolist(), ins[2].tolist()
        axes = ins[3].tolist() if len(ins) > 3 else list(range(len(starts)))
        steps = ins[4].tolist() if len(ins) > 4 else [1] * len(starts)
    else:
        starts, ends = a["starts"], a["ends"]
        axes, steps = a.get("axes", list(range(len(starts)))), [1] * len(starts)
    cut = [slice(None)] * x.ndim
    for s, e, ax, st in zip(starts, ends, axes, steps, strict=True):
        cut[int(ax) % x.ndim] = slice(int(s), int(e), int(st))
    return x[tuple(cut)]


def _div(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    x, y = ins
    if x.dtype.kind in "iu" and y.dtype.kind in "iu":
        if not y.all():
            raise ZeroDivisionError
        return np.trunc(np.true_divide(x, y)).astype(np.result_type(x, y))
    return np.divide(x, y)


def _cast(ins: list[np.ndarray], a: dict[str, Any]) -> np.ndarray:
    dt = dtype_by_onnx_code(int(a["to"]))
    np_type = numpy_type(dt.name) if dt is not None else None
    if np_type is None or np_type.kind not in "biuf":
        raise ValueError("not a number type")
    return ins[0].astype(np_type)


_OPS: dict[str, Op] = {
    "Identity": lambda ins, a: ins[0],
    "Cast": _cast,
    "Gather": lambda ins, a: np.take(ins[0], ins[1], axis=int(a.get("axis", 0))),
    "Concat": lambda ins, a: np.concatenate(ins, axis=int(a.get("axis", 0))),
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Slice": _slice,
    "Add": lambda ins, a: np.add(ins[0], ins[1]),
    "Sub": lambda ins, a: np.subtract(ins[0], ins[1]),
    "Mul": lambda ins, a: np.multiply(ins[0], ins[1]),
    "Div": _div,
    "Neg": lambda ins, a: np.negative(ins[0]),
    "Equal": lambda ins, a: np.equal(ins[0], ins[1]),
    "Where": lambda ins, a: np.where(ins[0], ins[1], ins[2]),
    "Max": lambda ins, a: np.maximum.reduce(np.broadcast_arrays(*ins)),
    "Min": lambda ins, a: np.minimum.reduce(np.broadcast_arrays(*ins)),
    "Reshape": lambda ins, a: ins[0].reshape([int(d) for d in ins[1].tolist()]),
}
# Ops whose output value follows their inputs' shapes or values: a change reaching one passes
# on even when its output's type stays (a Shape of a new shape is still an int64 vector).
VALUE_OPS = frozenset({"Shape", "Size", "Constant", *_OPS})


class SmallValues:
    """Values of small integer tensors of one graph state, made once each on demand."""

    def __init__(self, graph: Graph, producer: np.ndarray) -> None:
        self.graph = graph
        self.producer = producer
        self.known: dict[int, np.ndarray | None] = {}

    def of(self, t: int, depth: int = 0) -> np.ndarray | None:
        """The values of tensor ``t``, or None when they are not known or not small."""
        if t in self.known:
            return self.known[t]
        value = None
        if depth <= MAX_DEPTH:
            try:
                value = self._make(t, depth)
            except Exception:  # an op these few rules cannot evaluate on these values
                value = None
        if value is not None and (value.size > SMALL or value.dtype.kind not in "biuf"):
            value = None
        self.known[t] = value
        return value

    def _make(self, t: int, depth: int) -> np.ndarray | None:
        tensor = self.graph.tensors[t]
        shape = tensor.shape
        sized = "rank_unknown" not in tensor.metadata and min(shape, default=0) >= 0
        if sized and int(np.prod(shape)) > SMALL:
            return None  # data, not a shape: not worth making
        if tensor.kind == "weight" or self.producer[t] < 0:
            return np.asarray(tensor.data) if sized and tensor.has_data else None
        node = self.graph.nodes[int(self.producer[t])]
        if len(node.outputs) != 1:
            return None
        return self._run(node, depth)

    def _run(self, node: Node, depth: int) -> np.ndarray | None:
        op, attrs = node.op_type, node.attributes
        if op in ("Shape", "Size"):
            source = self.graph.tensors[node.inputs[0]]
            dims = source.shape
            if "rank_unknown" in source.metadata or min(dims, default=0) < 0:
                return None
            if op == "Size":
                return np.array(int(np.prod(dims)), dtype=np.int64)
            start, end = attrs.get("start", 0), attrs.get("end")
            return np.array(dims, dtype=np.int64)[start:end]
        if op == "Constant":
            return _constant(attrs)
        run = _OPS.get(op)
        if run is None or not node.inputs:
            return None
        ins = [self.of(i, depth + 1) for i in node.inputs]
        if any(v is None for v in ins):
            return None
        return np.asarray(run(ins, attrs))  # type: ignore[arg-type]


def _constant(attrs: dict[str, Any]) -> np.ndarray | None:
    for key, dtype in (("value_int", np.int64), ("value_ints", np.int64)):
        if key in attrs:
            return np.array(attrs[key], dtype=dtype)
    value = attrs.get("value")
    summary = value.get("tensor") if isinstance(value, dict) else None
    if not isinstance(summary, dict):
        return None
    np_type = numpy_type(str(summary.get("dtype")))
    shape = summary.get("shape")
    if np_type is None or not isinstance(shape, list):
        return None
    if isinstance(summary, AttributeTensor) and summary.has_data:
        return np.asarray(summary.array()) if int(np.prod(shape)) <= SMALL else None
    values = summary.get("values")
    if not isinstance(values, list) or np_type.kind not in "biuf":
        return None
    return np.array(values, dtype=np_type).reshape([int(d) for d in shape])
