"""Model-level edits of a Graph, each checked first and undoable exactly.

Every edit function takes the graph and the request, checks all of it, then applies the change
and returns the :class:`Edit` that it applied. Nothing is written before the checks pass, so a
refused edit (``EditError``, whose message names the thing and says how to fix the request)
leaves the graph as it was.

Undo. An ``Edit`` is a description and a tuple of primitive steps (``edits.steps``): replace one
field of a node, tensor or the graph (old and new value kept), or insert/remove one node or
tensor at a position. ``edit.revert(graph)`` runs the steps' inverses in reverse order and
``edit.apply(graph)`` runs them again; both call ``graph.invalidate()``. Steps never change a
list or dict in place (they swap in a new one), so the old values they keep stay true, and
undoing a sequence of edits in reverse order gives a graph equal to the original, with node
and tensor order, index lists and metadata key order as they were. An undo stack keeps the
returned Edits: a QUndoCommand's ``undo`` calls ``revert`` and its ``redo`` calls ``apply``
(skipping the first redo, since the edit function already applied it).

Choices worth knowing:

- An attribute goes into ``attributes`` when the op's ONNX schema (any version) defines it or
  the node already has it there, else into ``metadata.attributes`` (where the ONNX reader puts
  non-schema attributes). Its value is checked against the type in the newest default-domain
  schema; TENSOR, GRAPH and the other non-scalar types are read-only.
- A node's ``parent_id``/``children_ids`` are changed only by renaming, grouping, ungrouping
  and deleting, which keep both sides of each link in step.
- ``delete_node`` keeps an output tensor that other nodes read (their input then dangles) or
  that is a graph input or output; it removes the others. The weights it read stay.
- ``mark_output`` turns an activation into kind ``output``; ``unmark_output`` turns it back.
- Setting or removing an attribute, a tensor's shape or dtype, and bypassing a node infer the
  types downstream again (``reinfer``: ONNX's per-node inference, remembered per distinct
  block); an op ONNX has no schema for is typed by a registered probe (the executor runs its
  kernel on placeholders); what neither can tell becomes unknown, and measured times of the
  nodes reached go.
  Those changes are steps of the same Edit, so undo restores the old types and times.
"""

from __future__ import annotations

from xocview.model.edits.add import add_node, infer_output
from xocview.model.edits.attrs import (
    EXTRA_ATTRIBUTES_KEY,
    add_attribute,
    attribute_type,
    check_attribute_value,
    delete_metadata,
    remove_attribute,
    set_attribute,
    set_metadata,
)
from xocview.model.edits.imported import import_values
from xocview.model.edits.nodes import bypass_node, delete_node, group_nodes, ungroup
from xocview.model.edits.run import record_run
from xocview.model.edits.steps import Edit
from xocview.model.edits.tensors import (
    mark_output,
    rename_node,
    rename_tensor,
    set_dtype,
    set_kind,
    set_shape,
    unmark_output,
)

__all__ = [
    "EXTRA_ATTRIBUTES_KEY",
    "Edit",
    "add_attribute",
    "add_node",
    "attribute_type",
    "bypass_node",
    "check_attribute_value",
    "delete_metadata",
    "delete_node",
    "group_nodes",
    "import_values",
    "infer_output",
    "mark_output",
    "record_run",
    "remove_attribute",
    "rename_node",
    "rename_tensor",
    "set_attribute",
    "set_dtype",
    "set_kind",
    "set_metadata",
    "set_shape",
    "ungroup",
    "unmark_output",
]
