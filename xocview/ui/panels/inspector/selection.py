"""The inspector's rows for each kind of selection: a node, a tensor, or the whole graph."""

from __future__ import annotations

import functools
import html
from collections.abc import Callable
from typing import cast

import numpy as np
from PySide6.QtWidgets import QTreeWidgetItem

from xocview.model import DTYPES, Tensor, edits
from xocview.model.analyses import opfacts
from xocview.model.analyses.opdoc import OpDoc, node_doc, roles
from xocview.model.analyses.parameters import parameters
from xocview.model.analyses.profile import format_ms, stored_time
from xocview.model.analyses.summary import GraphSummary, shape_text
from xocview.ui.commands import perform
from xocview.ui.document import Document
from xocview.ui.panels.inspector.cells import Cells, parse_value
from xocview.ui.panels.inspector.group_rows import group_rows

__all__ = ["attribute_type", "graph_rows", "node_rows", "parse_shape", "tensor_row", "tensor_rows"]


def tensor_row(
    cells: Cells, parent: QTreeWidgetItem, doc: Document, t: int, role: str = ""
) -> None:
    """A linked tensor row; ``role`` (the schema's name for the slot: X, W, B) in column 2."""
    ten = doc.graph.tensors[t]
    item = cells.row(parent, ten.id, f"{ten.kind}  {shape_text(ten)}  {ten.dtype}", ("tensor", t))
    if role:
        item.setText(2, role)
        item.setToolTip(2, f"{role}: the operator's name for this {parent.text(0)[:-1].lower()}")


def _schema_rows(cells: Cells, schema: OpDoc | None) -> None:
    """Where the operator is defined and the first paragraph of its ONNX documentation."""
    if schema is None:
        return
    t = cells.tree
    where = f"{schema.domain}, since opset {schema.since_version}"
    cells.row(t, "Schema", where)
    if schema.summary:
        doc = cells.row(t, "Documentation", schema.summary)
        title = f"<b>{html.escape(schema.op_type)}</b> ({html.escape(where)})"
        tip = f"<p>{title}</p><p>{html.escape(schema.summary)}</p>"
        doc.setToolTip(0, tip)
        doc.setToolTip(1, tip)  # rich text wraps; the plain summary would run off the screen


def node_rows(cells: Cells, doc: Document, i: int) -> None:
    g = doc.graph
    node = g.nodes[i]
    t = cells.tree
    cells.editable(
        cells.row(t, "Node", node.id),
        lambda text: perform(doc, edits.rename_node, node.id, text),
    )
    schema = None if doc.hierarchy.is_group[i] else node_doc(g, i)
    cells.row(t, "Op type", node.op_type)
    _schema_rows(cells, schema)
    attrs = cells.row(t, "Attributes", str(len(node.attributes)))
    for name, value in node.attributes.items():
        cells.nested(attrs, name, value)
        row = attrs.child(attrs.childCount() - 1)
        if row is not None and row.childCount() == 0:
            cells.editable(
                row,
                functools.partial(_edit_attribute, doc, node.id, name),
            )
        if row is not None:
            row.setText(2, attribute_type(value))
    in_roles = out_roles = [""] * max(len(node.inputs), len(node.outputs))
    if schema is not None:
        in_roles = roles(schema.inputs, len(node.inputs), node.metadata.get("omitted_inputs"))
        out_roles = roles(schema.outputs, len(node.outputs), node.metadata.get("omitted_outputs"))
    own_io = bool(node.inputs or node.outputs)  # a scope has none: its border's are listed
    if own_io or not doc.hierarchy.is_group[i]:
        ins = cells.row(t, "Inputs", str(len(node.inputs)))
        for k, role in zip(node.inputs, in_roles, strict=False):
            tensor_row(cells, ins, doc, k, role)
        outs = cells.row(t, "Outputs", str(len(node.outputs)))
        for k, role in zip(node.outputs, out_roles, strict=False):
            tensor_row(cells, outs, doc, k, role)
    if doc.hierarchy.is_group[i]:
        group_rows(cells, doc, i, tensor_row, own_io)
    else:
        cells.row(t, "Category", opfacts.category(node.op_type))
        ops, assumed = opfacts.flops_assuming(g, i, 1)
        cells.row(t, "FLOPs", opfacts.flops_text(ops, assumed))
        cells.row(t, "Parameters", f"{parameters(g, i):,}")
    ms = doc.times_ms()[i]
    if np.isfinite(ms):  # measured by a run or stored in the file; a group sums its leaves
        total = " (sum of its leaves)" if doc.hierarchy.is_group[i] else ""
        own = stored_time(node.metadata, doc.shown_time_engine())
        if doc.hierarchy.is_group[i] and np.isfinite(own):  # an If or Loop: its bodies + itself
            total = f" (its bodies, and {format_ms(own)} of its own)"
        source = doc.time_label()  # "" when our executor's are the only times
        name = f"Time ({source})" if source else "Time (CPU)"
        cells.row(t, name, f"{format_ms(float(ms))}{total}{_fused_note(doc, node.id)}")
    cells.nested(
        t,
        "Metadata",
        node.metadata,
        lambda key, value: perform(doc, edits.set_metadata, key, value, node=node.id),
    )


def tensor_rows(
    cells: Cells, doc: Document, ti: int, show_values: Callable[[Tensor], None]
) -> None:
    g = doc.graph
    ten = g.tensors[ti]
    t = cells.tree
    cells.editable(
        cells.row(t, "Tensor", ten.id),
        lambda text: perform(doc, edits.rename_tensor, ten.id, text),
    )
    cells.editable(
        cells.row(t, "Kind", ten.kind),
        lambda text: perform(doc, edits.set_kind, ten.id, text.strip()),
    )
    cells.editable(
        cells.row(t, "Shape", shape_text(ten)),
        lambda text: perform(doc, edits.set_shape, ten.id, parse_shape(text)),
    )
    cells.editable(
        cells.row(t, "Dtype", ten.dtype),
        lambda text: perform(doc, edits.set_dtype, ten.id, text.strip()),
    )
    bits = DTYPES[ten.dtype].bits if ten.dtype in DTYPES else None
    if bits and all(d >= 0 for d in ten.shape) and not ten.metadata.get("rank_unknown"):
        count = int(np.prod(ten.shape, dtype=np.int64))
        cells.row(t, "Size", f"{count * bits // 8:,} bytes ({count:,} elements)")
    if ten.has_data:
        show_values(ten)
    p = int(g.index.producer[ti])
    cells.row(t, "Producer", g.nodes[p].id if p >= 0 else "(none)", ("node", p) if p >= 0 else None)
    cons = cells.row(t, "Consumers", str(len(g.index.consumers_of(ti))))
    for c in g.index.consumers_of(ti).tolist():
        cells.row(cons, g.nodes[c].id, g.nodes[c].op_type, ("node", c))
    cells.nested(
        t,
        "Metadata",
        ten.metadata,
        lambda key, value: perform(doc, edits.set_metadata, key, value, tensor=ten.id),
    )


def graph_rows(cells: Cells, doc: Document) -> None:
    g = doc.graph
    t = cells.tree
    summary = doc.fact("summary")
    if summary is None:  # a big graph's summary is made in the background (facts_changed)
        cells.row(t, "Graph", g.name)
        cells.row(t, "File", str(doc.path) if doc.path else "")
        cells.row(t, "Format", doc.format)
        cells.row(t, "Nodes", f"{len(g.nodes)} (summarising...)")
        return
    s = cast(GraphSummary, summary)
    cells.row(t, "Graph", s.name)
    cells.row(t, "Id", s.id)
    cells.row(t, "File", str(doc.path) if doc.path else "")
    cells.row(t, "Format", doc.format)
    cells.row(t, "Nodes", f"{s.num_nodes} ({s.num_groups} groups, depth {s.hierarchy_depth})")
    cells.row(t, "Tensors", f"{s.num_tensors}")
    cells.row(t, "Parameters", f"{s.parameters:,}")
    flops = doc.fact("flops_at_batch_1")
    if flops is None:
        cells.row(t, "FLOPs", "counting...")
    else:
        total, unknown, assumed = cast(tuple[int, int, bool], flops)
        cells.row(t, "FLOPs", opfacts.flops_text(total, assumed, unknown))
    ins = cells.row(t, "Inputs", str(len(g.inputs)))
    for k in g.inputs:
        tensor_row(cells, ins, doc, k)
    outs = cells.row(t, "Outputs", str(len(g.outputs)))
    for k in g.outputs:
        tensor_row(cells, outs, doc, k)
    ops = cells.row(t, "Operators", str(len(s.op_histogram)))
    for op, n in s.op_histogram:
        cells.row(ops, op, n)
    cells.nested(
        t,
        "Metadata",
        g.metadata,
        lambda key, value: perform(doc, edits.set_metadata, key, value),
    )


def attribute_type(value: object) -> str:
    """The ONNX attribute type a value has (int, float, string, tensor, graph, or lists)."""
    if isinstance(value, bool):
        return "int"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        if "tensor" in value:
            return "tensor"
        if "graph" in value:
            return "graph"
        return "object"
    if isinstance(value, list):
        kinds = {attribute_type(v) for v in value}
        return f"{kinds.pop()}s" if len(kinds) == 1 else "list"
    return type(value).__name__


def _fused_note(doc: Document, node_id: str) -> str:
    """How the last run ran a node fused with others (a Conv with its BatchNormalization and
    Relu): its time is a FLOPs share of the fused step's."""
    fused = doc.last_run.fused if doc.last_run is not None else {}
    for head, others in fused.items():
        if node_id == head or node_id in others:
            names = ", ".join(n for n in [head, *others] if n != node_id)
            return f"; run fused with {names}, the time split by FLOPs"
    return ""


def _edit_attribute(doc: Document, node_id: str, name: str, text: str) -> str | None:
    return perform(doc, edits.set_attribute, node_id, name, parse_value(text))


def parse_shape(text: str) -> list[int]:
    """``1x3x224x224``, ``1, 3, 224, 224`` or ``[1, 3]``; ``?`` for an unknown dimension."""
    parts = [
        p for p in text.replace("[", "").replace("]", "").replace("x", ",").split(",") if p.strip()
    ]
    if text.strip() == "scalar":
        return []
    try:
        return [-1 if p.strip() in ("?", "-1") else int(p) for p in parts]
    except ValueError:
        return [text]  # type: ignore[list-item]  # the edit refuses it with its own message
