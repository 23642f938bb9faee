"""After an edit, the types of everything it reaches inferred again, so no fact stays stale.

An edit that changes what a node computes (an attribute, a tensor's shape or dtype, a node's
inputs) changes the types of the tensors downstream of it. ``reinfer`` walks downstream from
the nodes and tensors an edit touched, in topological order, and asks ONNX's per-node
inference (``onnx_infer``) for each node it reaches. A path stops where a node's outputs come
out as they were. A node ONNX cannot infer (an op of another domain, a function call, an
If/Loop whose bodies it would need, inputs of a type nobody knows) gets outputs of unknown
rank: unknown, never stale; its dtype stays unless an input's dtype changed. A node ONNX has
no schema for may be typed instead by a probe registered in ``fallback`` (the executor's
kernel run on placeholder inputs).

The measured times of the nodes reached (``performance.time``) describe the node as it was:
they go too. Everything is recorded as steps of the edit, so undo brings back the old types
and times exactly and redo sets the new ones without inferring again.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.model.edits.steps import Edit, SetField, SetTypes, Step, TensorType
from xocview.model.gc_pause import gc_paused
from xocview.model.graph import Graph, Node, Tensor

if TYPE_CHECKING:
    from xocview.model.index import GraphIndex

__all__ = ["SHAPE_NOTES", "edit_with_types", "infer_undeclared", "reinfer"]

# Metadata that describes a tensor's shape beyond its sizes.
SHAPE_NOTES = ("shape_symbols", "rank_unknown")
_CONTROL = frozenset({"If", "Loop", "Scan"})
ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})
# One-input ops whose ONNX inference gives the output the input's type (elementwise
# activations and maths): the type is passed on without building a memo key.
# fmt: off
_SAME_TYPE = frozenset({
    "Relu", "Sigmoid", "Tanh", "Abs", "Neg", "Exp", "Log", "Sqrt", "Erf", "Identity",
    "Softplus", "Softsign", "Reciprocal", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Elu",
    "Selu", "LeakyRelu", "HardSigmoid", "HardSwish", "Gelu", "Mish", "Celu", "ThresholdedRelu",
    "Not",
})
# fmt: on
_FLOAT_DATA = frozenset({"Resize", "Upsample"})  # float inputs whose values shape the output


def edit_with_types(
    graph: Graph,
    description: str,
    steps: Iterable[Step],
    nodes: Iterable[int] = (),
    tensors: Iterable[int] = (),
) -> Edit:
    """Apply ``steps``, then re-infer from ``nodes`` and the consumers of ``tensors`` (node and
    tensor positions after the steps); the Edit holds both, applied."""
    steps = tuple(steps)
    # the index of the graph before: still true after steps that change no link
    index = graph.index if all(_keeps_links(s) for s in steps) else None
    edit = Edit(description, steps)
    edit.apply(graph)
    more = reinfer(graph, nodes, tensors, index)
    return Edit(description, edit.steps + tuple(more)) if more else edit


def _keeps_links(step: Step) -> bool:
    """Whether a step leaves the graph's index (links, ids, order, groups) as it was."""
    if not isinstance(step, SetField):
        return False
    if step.field in ("attributes", "dtype", "shape"):
        return True
    if step.field != "metadata" or step.ref[0] == "graph":
        return False
    return step.ref[0] == "tensor" or all(
        step.old.get(k) == step.new.get(k) for k in ("parent_id", "children_ids")
    )


def infer_undeclared(graph: Graph) -> None:
    """Shapes and dtypes of the tensors a reader could not declare (those marked
    ``rank_unknown``: between the ONNX ops one source op was written as), by ONNX inference
    from the nodes that make them; every declared tensor keeps its shape, dtype and metadata,
    since the file knows them better (a symbolic size, a view built at run time)."""
    tensors = graph.tensors
    unknown = [
        i
        for i, n in enumerate(graph.nodes)
        if any(tensors[t].metadata.get("rank_unknown") for t in n.outputs)
    ]
    if not unknown:
        return
    declared = {
        k: (t.shape, t.dtype, t.metadata)
        for k, t in enumerate(tensors)
        if not t.metadata.get("rank_unknown")
    }
    reinfer(graph, nodes=unknown)
    for k, (shape, dtype, metadata) in declared.items():
        t = tensors[k]
        t.shape, t.dtype, t.metadata = shape, dtype, metadata


def reinfer(
    graph: Graph,
    nodes: Iterable[int] = (),
    tensors: Iterable[int] = (),
    index: GraphIndex | None = None,
) -> list[Step]:
    """Infer again the outputs of ``nodes`` and of every node downstream of them and of
    ``tensors`` (see the module doc); the changes are made and returned as steps. ``index``:
    the graph's, when the caller holds one that is still true."""
    nodes, tensors = list(nodes), list(tensors)
    if not nodes and not tensors:
        return []
    with gc_paused():  # tens of thousands of small objects, none of them garbage
        walk = _Walk(graph, index or graph.index)  # imports onnx: only when there is work
        for i in nodes:
            walk.push_node(i)
        for t in tensors:
            walk.push_consumers(t)
        walk.run()
        return walk.steps()


class _Walk:
    """One downstream walk: a heap of nodes by topological rank and the changes so far."""

    def __init__(self, graph: Graph, idx: GraphIndex) -> None:
        from xocview.model.edits import fallback, onnx_infer, small_values

        onnx_infer.start_walk()
        self.infer, self.small, self.fallback = onnx_infer, small_values, fallback
        self.graph = graph
        n = len(graph.nodes)
        # the heap holds ranks (ints compare fast); ``order`` turns a rank back into a node
        order = idx.topo_order
        if len(order) < n:  # nodes on or behind a cycle: after the others
            placed = np.zeros(n, dtype=bool)
            placed[order] = True
            order = np.concatenate([order, np.flatnonzero(~placed)])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n, dtype=np.int64)
        self.rank: list[int] = rank.tolist()
        self.order: list[int] = order.tolist()
        self.cons_ptr: list[int] = idx.consumer_ptr.tolist()
        self.cons: list[int] = idx.consumers.tolist()
        self.positions = idx.node_positions()
        self.opsets = onnx_infer.graph_opsets(graph)
        self.values = small_values.SmallValues(graph, idx.producer)
        self.heap: list[int] = []
        self.queued: set[int] = set()
        self.visited: list[int] = []
        self.ids: dict[int, int] = {}  # tensor position -> type id (-1: no tensor type)
        self.schemas: dict[tuple[str, Any], tuple[Any, Any]] = {}
        self.changed: list[int] = []
        self.old: list[TensorType] = []
        self.new: list[TensorType] = []
        self.dtype_changed: set[int] = set()

    def push_node(self, i: int) -> None:
        if 0 <= i < len(self.rank) and i not in self.queued:
            self.queued.add(i)
            heapq.heappush(self.heap, self.rank[i])

    def push_consumers(self, t: int) -> None:
        if 0 <= t < len(self.cons_ptr) - 1:
            for i in self.cons[self.cons_ptr[t] : self.cons_ptr[t + 1]]:
                self.push_node(i)

    def type_of(self, t: int) -> int:
        """The type id of tensor ``t`` as it is now (-1 for a sequence, map or optional)."""
        found = self.ids.get(t)
        if found is None:
            tt = self.infer.tensor_ttype(self.graph.tensors[t])
            found = self.ids[t] = -1 if tt is None else self.infer.type_id(tt)
        return found

    def run(self) -> None:
        """Visit the queued nodes in topological order; each queues the consumers of the
        outputs it changed (the hot loop of an edit: locals, no calls it can spare)."""
        nodes, heap, rank, order = self.graph.nodes, self.heap, self.rank, self.order
        queued, visited = self.queued, self.visited
        cons, ptr, pop, push = self.cons, self.cons_ptr, heapq.heappop, heapq.heappush
        value_ops, types, tensors = self.small.VALUE_OPS, self.infer.TYPES, self.graph.tensors
        n_tensors = len(tensors)
        while heap:
            i = order[pop(heap)]
            visited.append(i)
            node = nodes[i]
            in_body = "subgraph" in node.metadata
            outs = node.outputs
            if not outs:
                continue
            try:
                found = self._infer(node)
            except Exception:  # a value no rule here reads (a damaged file): nothing inferred
                found = None
            passes_on = node.op_type in value_ops  # its value may change, its type not
            for k, t in enumerate(outs):
                if not 0 <= t < n_tensors:
                    continue  # a dangling reference: the validator's business
                new = found[k] if found is not None and k < len(found) else -1
                if new < 0:
                    new = self._unknown(node, t)
                tensor, nt = tensors[t], types[new]
                # the common case first: a new dtype or shape, told without the old type
                try:
                    differs = tensor.dtype != nt[0] or (not nt[3] and tuple(tensor.shape) != nt[1])
                    differs = differs or not self._same(self.type_of(t), new)
                except Exception:  # a shape that is no list of sizes: replaced
                    differs = True
                if differs:
                    self._write(tensor, t, new)
                    if in_body:  # what a body makes changed: its If/Loop/Scan is reached too
                        self._to_holder(node)
                elif not passes_on:
                    continue
                for c in cons[ptr[t] : ptr[t + 1]]:
                    if c not in queued:
                        queued.add(c)
                        push(heap, rank[c])

    def _to_holder(self, node: Node) -> None:
        holder = self.positions.get(node.metadata.get("parent_id"))  # type: ignore[arg-type]
        if holder is not None:
            self.push_node(holder)

    def _schema(self, node: Node) -> tuple[Any, Any]:
        """The node's schema and its memo key part, once per op of a domain."""
        domain = node.metadata.get("domain", "")
        schema = self.infer.node_schema(node, self.opsets)
        found = (schema, None if schema is None else self.infer.schema_key(schema))
        normal = "" if domain == "ai.onnx" else domain
        if not isinstance(domain, str) or normal in self.opsets or normal not in ONNX_DOMAINS:
            self.schemas[(node.op_type, domain)] = found  # else attributes choose: per node
        return found

    def _infer(self, node: Node) -> tuple[int, ...] | None:
        if node.op_type in _CONTROL:
            return None  # its bodies decide: inference would need them
        meta = node.metadata
        found = self.schemas.get((node.op_type, meta.get("domain", "") if meta else ""))
        schema, prefix = found if found is not None else self._schema(node)
        if schema is None:  # no ONNX inference: a registered probe may tell (fallback.py)
            return self._probe(node) if self.fallback.registered() else None
        ids = self._input_ids(node)
        if -1 in ids:
            return None
        if node.op_type in _SAME_TYPE and len(ids) == 1 and len(node.outputs) == 1:
            return ids  # what ONNX's inference of these does, without asking it
        data: tuple[Any, ...] | None = None
        in_data: list[Any] = []
        if not self.infer.INTEGER_TYPES.isdisjoint(ids) or node.op_type in _FLOAT_DATA:
            in_data = self._data(node, ids)
            data = self.infer.values_key(in_data)
        else:
            in_data = [None] * len(ids)
        key = self.infer.memo_key(prefix, node, ids, data)
        return self.infer.infer_ids(schema, node, key, ids, in_data)

    def _input_ids(self, node: Node) -> tuple[int, ...]:
        get = self.ids.get
        ids = tuple([get(t, -2) for t in node.inputs])
        if -2 in ids:  # first sight of some input
            ids = tuple([self.type_of(t) for t in node.inputs])
        return ids

    def _probe(self, node: Node) -> tuple[int, ...] | None:
        ids = self._input_ids(node)
        if -1 in ids:
            return None
        data = None
        if not self.infer.INTEGER_TYPES.isdisjoint(ids):
            data = self._data(node, ids)
        return self.fallback.infer_ids(self.graph, node, ids, data, self.opsets)

    def _data(self, node: Node, ids: tuple[int, ...]) -> list[Any]:
        feeds, types, values = self.small.feeds_data, self.infer.TYPES, self.values
        op = node.op_type
        return [
            values.of(t) if feeds(op, types[k][0]) else None
            for t, k in zip(node.inputs, ids, strict=True)
        ]

    def _unknown(self, node: Node, t: int) -> int:
        """What an output nobody can infer becomes: unknown rank; its dtype stays unless an
        input's dtype changed."""
        dtype = self.graph.tensors[t].dtype
        if not isinstance(dtype, str) or any(i in self.dtype_changed for i in node.inputs):
            dtype = "undefined"
        return self.infer.type_id((dtype, (), None, True))

    def _same(self, old_id: int, new_id: int) -> bool:
        """Whether a tensor of type ``old_id`` already says ``new_id``: only a dim symbol
        inference lost (it keeps fewer names than the exporter wrote) may differ."""
        if old_id == new_id:
            return True
        if old_id < 0:
            return False
        old, new = self.infer.TYPES[old_id], self.infer.TYPES[new_id]
        return old[0] == new[0] and old[1] == new[1] and old[3] == new[3] and new[2] is None

    def _write(self, tensor: Tensor, t: int, new_id: int) -> None:
        dtype, shape, symbols, rank_unknown = self.infer.TYPES[new_id]
        meta = tensor.metadata
        if meta and isinstance(meta, dict):
            meta = {k: v for k, v in meta.items() if k not in SHAPE_NOTES}
            if meta.get("type") not in (None, "tensor", "sparse_tensor"):
                meta.pop("type")  # a sequence or map before: inference says tensor now
        else:
            meta = {}
        if symbols is not None:
            meta["shape_symbols"] = list(symbols)
        if rank_unknown:
            meta["rank_unknown"] = True
        if dtype != tensor.dtype:
            self.dtype_changed.add(t)
        self.changed.append(t)
        self.old.append((tensor.dtype, tensor.shape, tensor.metadata))
        now: TensorType = (dtype, list(shape), meta)
        self.new.append(now)
        tensor.dtype, tensor.shape, tensor.metadata = now
        self.ids[t] = new_id

    def steps(self) -> list[Step]:
        found: list[Step] = []
        if self.changed:
            found.append(SetTypes(tuple(self.changed), tuple(self.old), tuple(self.new)))
        found.extend(_drop_times(self.graph, sorted(self.visited)))
        return found


def _drop_times(graph: Graph, reached: list[int]) -> list[SetField]:
    """Steps (applied) that take the measured times off the nodes reached."""
    steps: list[SetField] = []
    for i in reached:
        node = graph.nodes[i]
        perf = node.metadata.get("performance")
        if not isinstance(perf, dict) or "time" not in perf:
            continue
        rest = {k: v for k, v in perf.items() if k != "time"}
        meta = {k: v for k, v in node.metadata.items() if k != "performance"}
        if rest:
            meta = {**node.metadata, "performance": rest}
        step = SetField(("node", i), "metadata", node.metadata, meta)
        step.do(graph)
        steps.append(step)
    return steps
