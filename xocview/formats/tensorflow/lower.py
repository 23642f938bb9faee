"""TensorFlow ops run as ONNX ops: what one op's mapping writes (``TfEmit``, the shared ONNX
emitter reading a TF op) and the pass that rewrites a built graph (``lower_graph``).

A mapping reads the op's inputs by position (``e.x(1)``, ``e.value(1)`` for a constant's
values, followed through Identity and ReadVariableOp), its attributes by name
(``e.attr("strides")``), and writes ONNX nodes with ``e.op``; ``e.last`` writes the op that
makes output 0. What it writes is kept aside until it succeeds: a mapping that cannot write an
op raises ``NotMapped`` with the reason, and the op stays a ``tensorflow`` node that the
executor refuses by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.errors import FormatError
from xocview.formats.onnx_emit import MISSING, NotMapped, OnnxEmit, lookup
from xocview.formats.unique_ids import unique
from xocview.model import Graph, Node, Tensor
from xocview.model.edits.reinfer import reinfer

__all__ = ["NotMapped", "TfEmit", "lower_graph"]

_DOMAIN = "tensorflow"
_COPIES = frozenset({"Identity", "ReadVariableOp", "StopGradient", "Snapshot"})
# What a mapping raises when the file's operands do not fit it: the op stays unmapped.
_ARGUMENT_ERRORS = (IndexError, ValueError, TypeError, KeyError, ZeroDivisionError)


class TfEmit(OnnxEmit):
    """One TF op's mapping in progress; its new tensors' ids are unique in the whole graph."""

    def __init__(
        self,
        tensors: list[Tensor],
        node_id: str,
        ins: list[int],
        outs: list[int],
        attrs: dict[str, Any],
        through: dict[int, int] | None = None,
        tensor_ids: set[str] | None = None,
    ) -> None:
        super().__init__(tensors, node_id)
        self.ins, self.outs, self.attrs = ins, outs, attrs
        self.through = through or {}
        self.tensor_ids = tensor_ids if tensor_ids is not None else {t.id for t in tensors}

    # -- reading the op ------------------------------------------------------------------------

    def attr(self, name: str, default: Any = MISSING) -> Any:
        return lookup(self.attrs, name, default, "attribute")

    def has(self, k: int) -> bool:
        return 0 <= k < len(self.ins)

    def x(self, k: int = 0) -> int:
        """The graph position of input ``k``."""
        if not self.has(k):
            raise NotMapped(f"input {k} is missing")
        return self.ins[k]

    def value(self, k: int) -> np.ndarray:
        """Input ``k``'s values when it is a constant in the file (a Const or a variable),
        also when read through Identity or ReadVariableOp."""
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

    def root(self, t: int) -> int:
        """The tensor ``t`` copies through Identity-like ops (itself when none)."""
        for _ in range(len(self.through) + 1):
            if t not in self.through:
                break
            t = self.through[t]
        return t

    def ints(self, k: int) -> list[int]:
        return [int(v) for v in self.value(k).reshape(-1).tolist()]

    def int1(self, k: int) -> int:
        got = self.ints(k)
        if len(got) != 1:
            raise NotMapped(f"input {k} holds {len(got)} values, not one")
        return got[0]

    def shape(self, t: int) -> list[int]:
        """A tensor's shape when the file gives it (a frozen graph's activations rarely do)."""
        tensor = self.tensors[self.root(t)]
        known = tensor.kind in ("weight", "input") or bool(tensor.shape)
        if tensor.metadata.get("rank_unknown") or not known:
            raise NotMapped(f"the shape of {tensor.id!r} is not in the file")
        return list(tensor.shape)

    # -- writing -------------------------------------------------------------------------------

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

    def last(
        self, op_type: str, inputs: Sequence[int | None], attrs: dict[str, Any] | None = None
    ) -> None:
        """Write the op that makes the TF op's output 0."""
        if not self.outs:
            raise NotMapped("the op has no output")
        self.op(op_type, inputs, attrs, out=[self.outs[0]])

    def _tensor_id(self, label: str) -> str:
        return unique(f"{self.id}/{label}", self.tensor_ids)


Mapping = Callable[[TfEmit], None]


def lower_graph(graph: Graph) -> Graph:
    """Each ``tensorflow`` node the table maps replaced by its ONNX ops (one node, or a group
    of them marked ``derived: "tensorflow"`` in the node's place in its scope or call); the
    others keep their domain and say why in ``not_mapped``."""
    from xocview.formats.tensorflow.ops import TF_ONNX

    _unknown_ranks(graph)
    through = {
        n.outputs[0]: n.inputs[0]
        for n in graph.nodes
        if n.op_type in _COPIES and n.metadata.get("domain") == _DOMAIN and n.inputs and n.outputs
    }
    ids = {n.id for n in graph.nodes}
    tensor_ids = {t.id for t in graph.tensors}
    nodes: list[Node] = []
    for node in graph.nodes:
        meta = node.metadata
        tf = meta.get("tf")
        if meta.get("domain") != _DOMAIN or "children_ids" in meta or not isinstance(tf, dict):
            nodes.append(node)
            continue
        lower = TF_ONNX.get(node.op_type)
        if lower is None:
            meta.setdefault("not_mapped", f"TensorFlow op {node.op_type} has no ONNX mapping here")
            nodes.append(node)
            continue
        try:
            nodes.extend(_lowered(lower, graph.tensors, node, (ids, tensor_ids), through))
        except NotMapped as e:
            meta["not_mapped"] = f"{node.op_type}: {e}"
            nodes.append(node)
        except _ARGUMENT_ERRORS:
            meta["not_mapped"] = f"{node.op_type}: its operands do not fit the mapping"
            nodes.append(node)
    graph.nodes = nodes
    _infer(graph)
    return graph


def _infer(graph: Graph) -> None:
    """Shapes the file did not give, inferred through the ONNX ops (as the PyTorch reader
    does); the shapes the file declares stay as they are."""
    unknown = [
        i
        for i, n in enumerate(graph.nodes)
        if any(graph.tensors[t].metadata.get("rank_unknown") for t in n.outputs)
    ]
    if not unknown:
        return
    declared = {
        k: (t.shape, t.dtype, t.metadata)
        for k, t in enumerate(graph.tensors)
        if not t.metadata.get("rank_unknown")
    }
    reinfer(graph, nodes=unknown)
    for k, (shape, dtype, metadata) in declared.items():
        t = graph.tensors[k]
        t.shape, t.dtype, t.metadata = shape, dtype, metadata


def _unknown_ranks(graph: Graph) -> None:
    """A computed tensor the file gives no shape is of unknown rank, not a scalar."""
    for t in graph.tensors:
        if t.kind in ("activation", "output") and not t.shape and not t.has_data:
            t.metadata.setdefault("rank_unknown", True)


def _lowered(
    lower: Mapping,
    tensors: list[Tensor],
    node: Node,
    taken: tuple[set[str], set[str]],
    through: dict[int, int],
) -> list[Node]:
    """The mapping's ONNX nodes for ``node``, or the graph as it was and an exception."""
    ids, tensor_ids = taken
    mark = len(tensors)
    attrs = dict(node.metadata["tf"].get("attrs", {}))
    e = TfEmit(tensors, node.id, list(node.inputs), list(node.outputs), attrs, through, tensor_ids)
    try:
        lower(e)
        if not e.nodes:
            raise NotMapped("the mapping wrote no operator")
    except BaseException:
        tensor_ids.difference_update(t.id for t in tensors[mark:])
        del tensors[mark:]
        raise
    meta = {k: v for k, v in node.metadata.items() if k not in ("domain", "not_mapped")}
    if len(e.nodes) == 1:
        leaf = e.nodes[0]
        leaf.id = node.id
        leaf.metadata = {**meta, **leaf.metadata}
        return [leaf]
    children = []
    for child in e.nodes:
        child.id = unique(child.id, ids)
        child.metadata["parent_id"] = node.id
        children.append(child.id)
    # "derived": "tensorflow": one TF op drawn as a group of the ONNX ops it runs as
    group = {**meta, "children_ids": children, "derived": _DOMAIN}
    return [Node(node.id, node.op_type, [], [], {}, group), *e.nodes]
