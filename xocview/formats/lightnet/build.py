"""Checked LightNet ops (specs/lightnet-json-ir.md) linked by tensor names into the shared model.

- Ops become nodes with their names as ids (a repeat gets ``_2`` and a warning); optypes map to
  ONNX by ``op_table``; the optype, params and arg names stay in node metadata.
- ``create`` ops are not nodes: they make constants of declared shape, dtype and values, which
  our model calls weights. The tensor gets ``dims``, ``dtype`` and any values (a lone ``0`` is
  LightNet's zero fill; ``null`` or ``from_file`` gives none); the op's name and params go to
  its metadata under ``create``. LightNet has no graph inputs, so an image placeholder made by
  ``create`` is a weight too. ``zeros`` stays a node, its output typed like ``create``'s; other
  tensors are untyped (``[]`` + ``rank_unknown``, ``undefined``): LightNet infers them at run.
- Warnings, not errors: a tensor used but never defined (it becomes a graph input), used before
  its definition, or an empty tensor name (the port stays unconnected, ``omitted_inputs``).
- Graph outputs are the tensors a node defines and none uses (``print`` uses what it prints).
- Structural faults raise one FormatError naming the JSON path (most of them in ``check``).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.lightnet.check import TYPED_OPS, Op, describe
from xocview.formats.op_table import LIGHTNET_DERIVED, LIGHTNET_OPS, translate
from xocview.model import Finding, Graph, Node, Tensor
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.dtypes import numpy_type
from xocview.model.graph import LazyData
from xocview.model.schema import schema_attributes

__all__ = ["LIGHTNET_DTYPES", "Builder"]

_MAX_RANK = 32  # numpy's limit (64 since numpy 2; 32 before)

# LightNet's tl_dtype names (src/tl_type.c) and ours.
LIGHTNET_DTYPES = {"TL_FLOAT": "float32", "TL_DOUBLE": "double"} | {
    f"TL_{name.upper()}": name
    for name in ("int32", "int16", "int8", "uint32", "uint16", "uint8", "bool")
}


class Builder:
    """Walks the checked ops once, linking tensors by name and collecting warnings."""

    def __init__(self, file: str, graph: Graph) -> None:
        self.file = file
        self.graph = graph
        self.found: list[Finding] = []
        self.pos: dict[str, int] = {}  # tensor name -> index in graph.tensors
        self.defined: dict[str, tuple[str, str]] = {}  # tensor name -> (op name, place)
        self.early: dict[int, list[tuple[str, str]]] = {}  # used, not yet defined: (op, place)
        self.consumed: set[int] = set()
        self.produced: set[int] = set()
        self.first_op: dict[str, int] = {}
        self.node_ids: set[str] = set()

    def warn(self, place: str, message: str) -> None:
        self.found.append(Finding("warning", place, message))

    def build(self, ops: list[Op]) -> tuple[Graph, list[Finding]]:
        for op in ops:
            nid = self.op_id(op)
            if op.optype == "create":
                self.create(op)
            else:
                self.node(op, nid)
        self.finish()
        self.found.sort(key=lambda f: int(f.place[4 : f.place.index("]")]))  # file order
        self.graph.invalidate()
        return self.graph, self.found

    def op_id(self, op: Op) -> str:
        """The op's name, suffixed when an earlier op has it already."""
        first = self.first_op.setdefault(op.name, op.index)
        nid, k = op.name, 2
        while nid in self.node_ids:
            nid, k = f"{op.name}_{k}", k + 1
        self.node_ids.add(nid)
        if first != op.index:
            shown = "it makes a weight" if op.optype == "create" else f"its node id is '{nid}'"
            self.warn(
                f"{op.place}.name",
                f"duplicate op name '{op.name}' (first at ops[{first}]); {shown}",
            )
        return nid

    # -- tensors -------------------------------------------------------------------------------

    def declared(self, op: Op) -> tuple[list[int], str]:
        """Shape and dtype of a typed op's output; an unknown dtype name warns."""
        raw = op.params["dtype"]
        if raw not in LIGHTNET_DTYPES:
            self.warn(
                f"{op.place}.params[{op.where['dtype']}].value",
                f"unknown LightNet dtype '{raw}' (known: {', '.join(LIGHTNET_DTYPES)}); "
                "the tensor's dtype is shown as undefined",
            )
        return list(op.params["dims"]), LIGHTNET_DTYPES.get(raw, "undefined")

    def use(self, name: str, place: str, op: Op) -> int:
        t = self.pos.get(name)
        if t is None:
            t = self.pos[name] = len(self.graph.tensors)
            self.graph.tensors.append(_untyped(name))
            self.early[t] = []
        if t in self.early:
            self.early[t].append((op.name, place))
        self.consumed.add(t)
        return t

    def define(self, name: str, place: str, op: Op, tensor: Tensor) -> int:
        """Add (or complete, after an early use) the tensor ``op`` defines."""
        if name in self.defined:
            by, where = self.defined[name]
            raise FormatError(
                self.file,
                place,
                f"tensor '{name}' is already defined by op '{by}' ({where})",
                "a new tensor name (each tensor is defined by one op's tensors_out)",
            )
        self.defined[name] = (op.name, place)
        t = self.pos.get(name)
        if t is None:
            t = self.pos[name] = len(self.graph.tensors)
            self.graph.tensors.append(tensor)
            return t
        self.graph.tensors[t] = tensor
        user, where = self.early.pop(t)[0]
        self.warn(
            where,
            f"tensor '{name}' is used by op '{user}' before op '{op.name}' ({place}) defines "
            "it; LightNet needs each tensor defined first",
        )
        return t

    def create(self, op: Op) -> None:
        name = op.outs[0][1]
        shape, dtype = self.declared(op)
        metadata = {"create": {"name": op.name, "params": expand_dotted_if_possible(op.params)}}
        tensor = Tensor(name, "weight", shape, dtype, metadata, self.values(op, shape, dtype))
        self.define(name, f"{op.place}.tensors_out[0]", op, tensor)

    def values(self, op: Op, shape: list[int], dtype: str) -> np.ndarray | LazyData | None:
        """The create op's ``data``: all values, or one 0 for LightNet's zero fill."""
        data = op.params.get("data")
        np_type = numpy_type(dtype)
        if data is None or op.params.get("from_file") is True or np_type is None:
            return None
        size = math.prod(shape)
        if len(shape) > _MAX_RANK:
            self.warn(
                f"{op.place}.params[{op.where.get('shape', 0)}].value",
                f"the shape has {len(shape)} dimensions, more than an array holds "
                f"({_MAX_RANK}); its values are not loaded",
            )
            return None
        if type(data) is list and all(isinstance(v, (int, float)) for v in data):
            if len(data) == size:
                return np.asarray(data, dtype=np.float64).astype(np_type).reshape(shape)
            if data == [0]:
                return partial(np.zeros, tuple(shape), dtype=np_type)
        self.warn(
            f"{op.place}.params[{op.where['data']}].value",
            f"data is {describe(data)}, not {size} numbers; its values are not loaded",
        )
        return None

    # -- nodes ---------------------------------------------------------------------------------

    def node(self, op: Op, nid: str) -> None:
        metadata: dict[str, Any] = {"op": op.optype}
        if op.params:
            metadata["params"] = expand_dotted_if_possible(op.params)
        metadata["arg_names"] = {
            "tensors_in": [arg for arg, _ in op.ins],
            "tensors_out": [arg for arg, _ in op.outs],
        }
        if nid != op.name:
            metadata["name"] = op.name
        for side, key, ports in (
            ("input", "tensors_in", op.ins),
            ("output", "tensors_out", op.outs),
        ):
            omitted = [k for k, (_, name) in enumerate(ports) if not name]
            for k in omitted:
                self.warn(
                    f"{op.place}.{key}[{k}]",
                    f"op '{op.name}' names no tensor for {side} '{ports[k][0]}'; left unconnected",
                )
            if omitted:
                metadata[f"omitted_{side}s"] = omitted
        if op.extra:
            metadata["fields"] = expand_dotted_if_possible(op.extra)
        place = op.place
        inputs = [
            self.use(n, f"{place}.tensors_in[{k}]", op) for k, (_, n) in enumerate(op.ins) if n
        ]
        outputs = [
            self.make(n, f"{place}.tensors_out[{k}]", op) for k, (_, n) in enumerate(op.outs) if n
        ]
        op_type, attributes = _translated(op)
        self.graph.nodes.append(Node(nid, op_type, inputs, outputs, attributes, metadata))

    def make(self, name: str, place: str, op: Op) -> int:
        """A node's output: typed by ``zeros``' params, else left for LightNet to infer."""
        if op.optype in TYPED_OPS:
            tensor = Tensor(name, "activation", *self.declared(op))
        else:
            tensor = _untyped(name)
        t = self.define(name, place, op, tensor)
        self.produced.add(t)
        return t

    def finish(self) -> None:
        """Undefined tensors become graph inputs; unused node results, graph outputs."""
        graph = self.graph
        for t, users in self.early.items():
            tensor = graph.tensors[t]
            ops = list(dict.fromkeys(user for user, _ in users))
            names = ", ".join(f"'{u}'" for u in ops)
            said = f"used by op{'s' if len(ops) > 1 else ''} {names} but never defined"
            tensor.kind = "input"
            tensor.metadata = {"undefined": said, **tensor.metadata}
            graph.inputs.append(t)
            self.warn(users[0][1], f"tensor '{tensor.id}' is {said}; shown as a graph input")
        for t in sorted(self.produced - self.consumed):
            graph.tensors[t].kind = "output"
            graph.outputs.append(t)


def _untyped(name: str) -> Tensor:
    """A tensor whose shape and dtype LightNet infers only when it runs."""
    return Tensor(name, "activation", [], "undefined", {"rank_unknown": True})


def _translated(op: Op) -> tuple[str, dict[str, Any]]:
    """The ONNX op type and the attributes its schema defines; else the optype and none."""
    found = translate(LIGHTNET_OPS, op.optype, op.params)
    if found is None:
        return op.optype, {}
    derive = LIGHTNET_DERIVED.get(op.optype)
    raw = {**found.attributes, **(derive(op.params) if derive else {})}
    allowed = schema_attributes(found.op_type) or frozenset()
    return found.op_type, {k: v for k, v in raw.items() if v is not None and k in allowed}
