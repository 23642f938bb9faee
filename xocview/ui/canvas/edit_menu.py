"""The canvas's context menu: edit the node under the cursor (rename, delete, bypass, group,
ungroup) or add a node, each through the undo stack."""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx.defs
from PySide6.QtWidgets import QInputDialog, QMenu

from xocview.model import edits
from xocview.ui.canvas.drawing import KIND_GROUP

if TYPE_CHECKING:
    from xocview.ui.canvas.view import GraphView

__all__ = ["RENAME_CHARS", "edit_menu"]

RENAME_CHARS = 32767  # what a QLineEdit holds


def edit_menu(view: GraphView, item: int) -> QMenu:
    """The menu for drawing item ``item`` (-1: the empty canvas)."""
    d = view.doc.drawing
    menu = QMenu(view)
    if item >= 0 and d.item_node[item] >= 0:
        node = view.doc.graph.nodes[int(d.item_node[item])]
        view.doc.select_node(int(d.item_node[item]))
        menu.addAction("Rename...", lambda: _rename(view, node.id))
        menu.addAction("Delete Node", lambda: view.edit(edits.delete_node, node.id))
        menu.addAction("Bypass Node", lambda: view.edit(edits.bypass_node, node.id))
        chosen = view.doc.selected_node_ids()
        label = f"Group {len(chosen)} Nodes" if len(chosen) > 1 else "Put in a New Group"
        menu.addAction(label, lambda: view.edit(edits.group_nodes, chosen or [node.id]))
        if d.kind[item] == KIND_GROUP or "children_ids" in node.metadata:
            menu.addAction("Ungroup", lambda: view.edit(edits.ungroup, node.id))
        menu.addSeparator()
    menu.addAction("Add Node...", lambda: _add_node(view))
    return menu


def _rename(view: GraphView, node_id: str) -> None:
    # A line edit holds at most 32,767 characters: a longer id would come back cut, and OK
    # would rename the node to its own prefix; such an id starts the edit empty instead.
    start = node_id if len(node_id) <= RENAME_CHARS else ""
    text, ok = QInputDialog.getText(view, "Rename node", "New id:", text=start)
    if ok and text != start:
        view.edit(edits.rename_node, node_id, text)


def _add_node(view: GraphView) -> None:
    ops = sorted({s.name for s in onnx.defs.get_all_schemas()})
    op, ok = QInputDialog.getItem(view, "Add node", "Operator:", ops, 0, True)
    if not ok or not op:
        return
    doc = view.doc
    g = doc.graph
    default = ""
    if doc.selected_node >= 0 and g.nodes[doc.selected_node].outputs:
        default = g.tensors[g.nodes[doc.selected_node].outputs[0]].id
    text, ok = QInputDialog.getText(
        view, "Add node", "Input tensor ids (comma separated):", text=default
    )
    if ok:
        inputs = [t.strip() for t in text.split(",") if t.strip()]
        view.edit(edits.add_node, op, inputs)
