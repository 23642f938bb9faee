"""Edits of ids and of tensors: rename, shape, dtype, kind, graph outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from xocview.errors import EditError
from xocview.model.dtypes import DTYPES, canonical_dtype
from xocview.model.edits.lookup import check_new_id, node_pos, tensor_pos, with_key
from xocview.model.edits.reinfer import SHAPE_NOTES, edit_with_types
from xocview.model.edits.steps import Edit, SetField, Step
from xocview.model.graph import TENSOR_KINDS

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = [
    "mark_output",
    "rename_node",
    "rename_tensor",
    "set_dtype",
    "set_kind",
    "set_shape",
    "unmark_output",
]


def _done(graph: Graph, description: str, steps: list[Step]) -> Edit:
    edit = Edit(description, tuple(steps))
    edit.apply(graph)
    return edit


def rename_node(graph: Graph, old: str, new: str) -> Edit:
    """Give a node a new id; its children's ``parent_id`` and its parent's ``children_ids``
    follow. Raises EditError for an unknown old id or a new id that is empty or taken."""
    pos = node_pos(graph, old)
    check_new_id(graph, "node", new)
    steps: list[Step] = [SetField(("node", pos), "id", old, new)]
    for i, node in enumerate(graph.nodes):
        meta = node.metadata
        if meta.get("parent_id") == old:
            meta = with_key(meta, "parent_id", new)
        kids = meta.get("children_ids")
        if isinstance(kids, list) and old in kids:
            meta = with_key(meta, "children_ids", [new if k == old else k for k in kids])
        if meta is not node.metadata:
            steps.append(SetField(("node", i), "metadata", node.metadata, meta))
    return _done(graph, f"rename node '{old}' to '{new}'", steps)


def rename_tensor(graph: Graph, old: str, new: str) -> Edit:
    """Give a tensor a new id (nodes refer to tensors by index, so nothing else changes).
    Raises EditError for an unknown old id or a new id that is empty or taken."""
    pos = tensor_pos(graph, old)
    check_new_id(graph, "tensor", new)
    return _done(
        graph, f"rename tensor '{old}' to '{new}'", [SetField(("tensor", pos), "id", old, new)]
    )


def _check_shape(tensor_id: str, shape: Any) -> list[int]:
    ok = isinstance(shape, (list, tuple)) and all(
        isinstance(d, int) and not isinstance(d, bool) and d >= -1 for d in shape
    )
    if not ok:
        raise EditError(
            f"tensor '{tensor_id}': shape {shape!r} is not a list of integers >= -1; "
            "give sizes such as [1, 3, 224, 224] (-1 for an unknown size)"
        )
    return list(shape)


def set_shape(graph: Graph, tensor_id: str, shape: Any) -> Edit:
    """Set a tensor's shape (integers >= -1, -1 for an unknown size; ``[]`` for a scalar).

    The tensor's ``shape_symbols`` and ``rank_unknown`` notes describe the old shape and are
    dropped. Raises EditError for an unknown tensor or a bad shape.
    """
    pos = tensor_pos(graph, tensor_id)
    new_shape = _check_shape(tensor_id, shape)
    t = graph.tensors[pos]
    steps: list[Step] = [SetField(("tensor", pos), "shape", t.shape, new_shape)]
    if any(k in t.metadata for k in SHAPE_NOTES):
        meta = {k: v for k, v in t.metadata.items() if k not in SHAPE_NOTES}
        steps.append(SetField(("tensor", pos), "metadata", t.metadata, meta))
    # the tensor's readers and all downstream are inferred again from the new shape
    return edit_with_types(
        graph, f"set shape of '{tensor_id}' to {new_shape}", steps, tensors=[pos]
    )


def set_dtype(graph: Graph, tensor_id: str, dtype: str) -> Edit:
    """Set a tensor's element type (a known name such as float16; ONNX spellings accepted).
    Raises EditError for an unknown tensor or dtype."""
    pos = tensor_pos(graph, tensor_id)
    canon = canonical_dtype(dtype) if isinstance(dtype, str) else None
    if canon is None:
        raise EditError(
            f"tensor '{tensor_id}': unknown dtype {dtype!r}; give one of " + ", ".join(DTYPES)
        )
    t = graph.tensors[pos]
    step = SetField(("tensor", pos), "dtype", t.dtype, canon)
    return edit_with_types(graph, f"set dtype of '{tensor_id}' to {canon}", [step], tensors=[pos])


def set_kind(graph: Graph, tensor_id: str, kind: str) -> Edit:
    """Set a tensor's kind (input, output, weight, activation); raises EditError otherwise."""
    pos = tensor_pos(graph, tensor_id)
    if kind not in TENSOR_KINDS:
        raise EditError(
            f"tensor '{tensor_id}': unknown kind {kind!r}; give one of " + ", ".join(TENSOR_KINDS)
        )
    t = graph.tensors[pos]
    return _done(
        graph,
        f"set kind of '{tensor_id}' to {kind}",
        [SetField(("tensor", pos), "kind", t.kind, kind)],
    )


def mark_output(graph: Graph, tensor_id: str) -> Edit:
    """Make a tensor a graph output (appended to ``outputs``); an activation becomes kind
    ``output``. Raises EditError for an unknown tensor or one that already is an output."""
    pos = tensor_pos(graph, tensor_id)
    if pos in graph.outputs:
        raise EditError(f"tensor '{tensor_id}' already is a graph output; nothing to mark")
    steps: list[Step] = [SetField(("graph", 0), "outputs", graph.outputs, [*graph.outputs, pos])]
    t = graph.tensors[pos]
    if t.kind == "activation":
        steps.append(SetField(("tensor", pos), "kind", t.kind, "output"))
    return _done(graph, f"mark '{tensor_id}' as a graph output", steps)


def unmark_output(graph: Graph, tensor_id: str) -> Edit:
    """Remove a tensor from the graph outputs (it stays in the graph); kind ``output`` becomes
    ``activation``. Raises EditError for an unknown tensor or one that is not an output."""
    pos = tensor_pos(graph, tensor_id)
    if pos not in graph.outputs:
        raise EditError(f"tensor '{tensor_id}' is not a graph output; nothing to remove")
    new = [t for t in graph.outputs if t != pos]
    steps: list[Step] = [SetField(("graph", 0), "outputs", graph.outputs, new)]
    t = graph.tensors[pos]
    if t.kind == "output":
        steps.append(SetField(("tensor", pos), "kind", t.kind, "activation"))
    return _done(graph, f"remove '{tensor_id}' from the graph outputs", steps)
