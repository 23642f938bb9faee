"""A checked NNVM document into the shared model: tensors, their kinds, and ONNX-named nodes.

Each ``null`` node becomes one tensor, an ``input`` or a ``weight`` (see ``is_weight``); each
operator becomes a node whose outputs are tensors named after it (``conv1``, then ``conv1:1``,
``conv1:2`` for further outputs). Tensors are created in entry order, so a tensor's position is
NNVM's entry id (``node_row_ptr[node] + index``), the index TVM's shape and type lists use.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from xocview.formats.nnvm.entries import TYPE_FLAGS, EntryAttrs, entry_attrs
from xocview.formats.op_table import NNVM_OPS, Rule, translate
from xocview.model import Finding, Graph, Node, Tensor
from xocview.model.dotted import (
    expand_dotted_if_possible,
)
from xocview.model.schema import schema_attributes

__all__ = ["Document", "Entry", "Flow", "RawNode", "build", "data_flow", "is_weight", "tvm_op_type"]

# Names MXNet gives learnable parameters and auxiliary states of its layers.
_PARAM_NAME = re.compile(
    r"_(?:weight|bias|gamma|beta|moving_mean|moving_var|running_mean|running_var)$"
)
_LABEL_NAME = re.compile(r"label$")
# TVM function names: "fuse_"/"fused_" + the fused op names + "_<n>" when a pattern repeats.
_FUSED = re.compile(r"fused?_(?P<core>.+)")
_COUNTER = re.compile(r"_\d+$")


@dataclass(frozen=True)
class Entry:
    """One output of a node: NNVM's ``[node, index, version]``."""

    node: int
    index: int
    version: int


@dataclass
class RawNode:
    """One checked node; ``attrs`` are parsed values, ``user_attrs`` MXNet 0.8's ``attr``."""

    op: str
    name: str
    inputs: list[Entry]
    attrs: dict[str, Any]
    user_attrs: dict[str, Any]
    control_deps: list[int]
    backward_source_id: int


@dataclass
class Document:
    """A checked NNVM graph: nodes in topological order, output counts, heads, graph attrs."""

    nodes: list[RawNode]
    heads: list[Entry]
    counts: list[int]
    attrs: dict[str, Any]


def build(doc: Document, file: str, name: str) -> tuple[Graph, list[Finding]]:
    """The graph of ``doc`` and warnings about names that had to change to stay unique."""
    offsets = [0]
    for c in doc.counts:
        offsets.append(offsets[-1] + c)
    types = entry_attrs(doc.attrs, offsets[-1], file)
    ids, found = _unique_names(doc.nodes)
    flow = data_flow(doc)
    heads = [offsets[e.node] + e.index for e in doc.heads]
    head_set = set(heads)
    taken = set(ids)
    graph = Graph(name, name, metadata=expand_dotted_if_possible(types.graph))
    for i, nd in enumerate(doc.nodes):
        if nd.op == "null":
            weight = is_weight(nd, flow, i)
            graph.tensors.append(_variable(nd, ids[i], weight, types, offsets[i]))
            if not weight:
                graph.inputs.append(offsets[i])
            continue
        outputs: list[int] = []
        for k in range(doc.counts[i]):
            eid = offsets[i] + k
            tid = ids[i] if k == 0 else _unique(f"{ids[i]}:{k}", taken)
            kind = "output" if eid in head_set else "activation"
            shape, dtype, metadata = _types(types, eid, None, None)
            graph.tensors.append(Tensor(tid, kind, shape, dtype, metadata))
            outputs.append(eid)
        inputs = [offsets[e.node] + e.index for e in nd.inputs]
        graph.nodes.append(_operator(nd, ids[i], ids, inputs, outputs))
    graph.outputs = heads
    return graph, found


@dataclass
class Flow:
    """Per node: is it read, read as a mutated (aux) state, does its value carry data."""

    read: list[bool]
    mutated: list[bool]
    carries: list[bool]


def data_flow(doc: Document) -> Flow:
    """How each node's value is used; what tells a variable's role when names do not.

    A value carries data when it is a graph output, the first (data) operand of an op with
    several inputs, or the first input of a one-input op whose result carries data; the label
    input of MXNet's ``*Output`` loss layers counts as data too. Parameters only ever meet
    other values as later operands (weight, bias, gamma), even after a chain of one-input ops
    (TVM's ``__mul_scalar__`` on a bias before ``dense``). Nodes come in topological order, so
    one pass from the last node back settles every consumer before its producers.
    """
    n = len(doc.nodes)
    flow = Flow([False] * n, [False] * n, [False] * n)
    read, mutated, carries = flow.read, flow.mutated, flow.carries
    for e in doc.heads:
        carries[e.node] = True
    for c in range(n - 1, -1, -1):
        consumer = doc.nodes[c]
        several = len(consumer.inputs) > 1
        label_slot = 1 if consumer.op.endswith("Output") else -1
        for slot, e in enumerate(consumer.inputs):
            read[e.node] = True
            if e.version:
                mutated[e.node] = True
            if (slot == 0 and (several or carries[c])) or slot == label_slot:
                carries[e.node] = True
    return flow


def is_weight(node: RawNode, flow: Flow, i: int) -> bool:
    """Whether a variable holds parameters (a weight) rather than data fed at run time.

    In order: a variable read through an entry of version != 0 is mutated by an op, an
    auxiliary state (BatchNorm's moving mean); one named ``*label`` is a loss layer's label; an
    ``__init__`` initializer or a parameter name (``*_weight``, ``*_gamma``, ``*_moving_var``,
    ...) marks a parameter; otherwise a variable is a parameter when it does not carry data
    (see ``data_flow``), which covers TVM's renamed ones (``p0``, ``conv_1_weight_OIHW3i8o``,
    ``1``). A variable nothing reads is an input.
    """
    if flow.mutated[i]:
        return True
    if _LABEL_NAME.search(node.name):
        return False
    if "__init__" in node.attrs or _PARAM_NAME.search(node.name):
        return True
    return flow.read[i] and not flow.carries[i]


def tvm_op_type(func_name: Any) -> tuple[str, Rule | None]:
    """The op type of a ``tvm_op`` node, and the NNVM rule it maps by when it maps.

    A compiled graph keeps only the kernel's name; its attributes, layout included, are gone.
    So a function maps to an ONNX op only when it is a single NNVM op (``fuse_relu``,
    ``fuse_dense_1``, ``fuse_flatten``) whose one rule reads no attribute. Fused or
    attribute-bound kernels (``fuse_conv2d_broadcast_add_relu_3``; ``fuse_conv2d``, whose
    padding is lost; ``fused_nn_global_avg_pool2d``, which may run on NCHW8c data) take
    the function name without TVM's repeat counter (``fuse_conv2d_broadcast_add_relu``) as op
    type: it says more than the generic ``tvm_op``, and equal kernels share one op type.
    """
    if not isinstance(func_name, str) or not func_name:
        return "tvm_op", None
    kernel = _COUNTER.sub("", func_name) or func_name
    m = _FUSED.fullmatch(kernel)
    if m is not None:
        core = m.group("core")
        for name in (core, core.removeprefix("nn_")):
            rules = NNVM_OPS.get(name, ())
            if len(rules) == 1 and not rules[0].when and not rules[0].attrs:
                return rules[0].onnx_op, rules[0]
    return kernel, None


def _operator(nd: RawNode, nid: str, ids: list[str], inputs: list[int], outputs: list[int]) -> Node:
    """The node: ONNX op type and schema attributes; the NNVM op and all attrs in metadata."""
    attributes: dict[str, Any] = {}
    if nd.op == "tvm_op":
        op_type, rule = tvm_op_type(nd.attrs.get("func_name"))
        if rule is not None:
            attributes = dict(rule.fixed)
    else:
        t = translate(NNVM_OPS, nd.op, nd.attrs)
        op_type = nd.op if t is None else t.op_type
        if t is not None:
            allowed = schema_attributes(op_type) or frozenset()
            attributes = {k: v for k, v in t.attributes.items() if v is not None and k in allowed}
    metadata = _source_metadata(nd, nid, {"op": nd.op})
    if any(e.version for e in nd.inputs):
        metadata["input_versions"] = [e.version for e in nd.inputs]
    if nd.control_deps:
        metadata["control_deps"] = [ids[d] for d in nd.control_deps]
    if nd.backward_source_id != -1:
        metadata["backward_source_id"] = nd.backward_source_id
    return Node(nid, op_type, inputs, outputs, attributes, metadata)


def _variable(nd: RawNode, tid: str, weight: bool, types: EntryAttrs, entry: int) -> Tensor:
    """A ``null`` node's tensor, typed by TVM's lists, else by ``__shape__``/``__dtype__``."""
    shape, dtype, metadata = _types(types, entry, _shape_hint(nd.attrs), _dtype_hint(nd.attrs))
    metadata = _source_metadata(nd, tid, metadata)
    return Tensor(tid, "weight" if weight else "input", shape, dtype, metadata)


def _types(
    types: EntryAttrs, entry: int, shape: list[int] | None, dtype: str | None
) -> tuple[list[int], str, dict[str, Any]]:
    """Shape, dtype and metadata of an entry: the graph's lists first, then the hints.

    An unknown shape is ``[]`` marked ``rank_unknown``; an unknown dtype is ``undefined``.
    """
    metadata = types.metadata(entry)
    told_shape = types.shape(entry)
    if told_shape is not None:
        shape = told_shape
    told, notes = types.dtype(entry)
    metadata.update(notes)
    if shape is None:
        shape = []
        metadata["rank_unknown"] = True
    return shape, told or dtype or "undefined", metadata


def _shape_hint(attrs: dict[str, Any]) -> list[int] | None:
    """MXNet's ``__shape__``; its 0 (and -1) dims mean "not known yet", XOC's -1."""
    hint = attrs.get("__shape__")
    if isinstance(hint, list) and all(type(d) is int for d in hint):
        return [d if d > 0 else -1 for d in hint]
    return None


def _dtype_hint(attrs: dict[str, Any]) -> str | None:
    flag = attrs.get("__dtype__")
    return TYPE_FLAGS.get(flag) if type(flag) is int else None


def _source_metadata(nd: RawNode, new_id: str, metadata: dict[str, Any]) -> dict[str, Any]:
    """The node's own name when its id had to change, and its attributes as parsed."""
    if new_id != nd.name:
        metadata["name"] = nd.name
    if nd.attrs:
        metadata["attrs"] = expand_dotted_if_possible(nd.attrs)
    if nd.user_attrs:
        metadata["user_attrs"] = expand_dotted_if_possible(nd.user_attrs)
    return metadata


def _unique_names(nodes: list[RawNode]) -> tuple[list[str], list[Finding]]:
    """Node names as ids: a repeated (or empty) name gets ``_2``, ``_3``, ... and a warning."""
    reserved = {nd.name for nd in nodes}
    assigned: dict[str, int] = {}
    ids: list[str] = []
    found: list[Finding] = []
    for i, nd in enumerate(nodes):
        if nd.name and nd.name not in assigned:
            assigned[nd.name] = i
            ids.append(nd.name)
            continue
        new = _unique(nd.name or f"node_{i}", reserved)
        assigned[new] = i
        ids.append(new)
        why = f"repeats the name of nodes[{assigned[nd.name]}]" if nd.name else "empty name"
        found.append(Finding("warning", f"nodes[{i}].name", f"{why}; loaded as '{new}'"))
    return ids, found


def _unique(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``, ... whichever is free; it is then taken."""
    new, k = wanted, 2
    while new in taken:
        new, k = f"{wanted}_{k}", k + 1
    taken.add(new)
    return new
