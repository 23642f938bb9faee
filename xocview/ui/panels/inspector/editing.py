"""The inspector's structural edits: what its context menu offers for the row under the mouse."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtWidgets import QTreeWidgetItem

from xocview.model import edits
from xocview.ui.commands import perform
from xocview.ui.document import Document
from xocview.ui.panels.inspector.cells import cell_text

__all__ = ["AskAnd", "Report", "metadata_key", "structural_actions"]

# ask_and(title, label, run): ask for "name = value" and hand both to run, which edits
AskAnd = Callable[[str, str, Callable[[str, Any], "str | None"]], None]
Report = Callable[["str | None"], None]  # show a refusal, or clear it with None


def structural_actions(
    doc: Document, item: QTreeWidgetItem | None, ask_and: AskAnd, report: Report
) -> list[tuple[str, Callable[[], None]]]:
    """The edits the context menu offers for ``item``: each asks with ``ask_and`` where it
    needs a name and a value, and hands its refusal (or None) to ``report``."""
    g = doc.graph
    out: list[tuple[str, Callable[[], None]]] = []
    owner: dict[str, str] = {}
    if doc.selected_node >= 0:
        node_id = g.nodes[doc.selected_node].id
        owner = {"node": node_id}
        out.append(
            (
                "Add Attribute...",
                lambda: ask_and(
                    "Add attribute",
                    "name = JSON value",
                    lambda name, value: perform(doc, edits.add_attribute, node_id, name, value),
                ),
            )
        )
        parent = item.parent() if item is not None else None
        if item is not None and parent is not None and parent.text(0) == "Attributes":
            name = cell_text(item, 0)
            out.append(
                (
                    f"Remove Attribute '{name}'",
                    lambda: report(perform(doc, edits.remove_attribute, node_id, name)),
                )
            )
    elif doc.selected_tensor >= 0:
        ten = g.tensors[doc.selected_tensor]
        owner = {"tensor": ten.id}
        if doc.selected_tensor in g.outputs:
            out.append(
                (
                    "Remove from Graph Outputs",
                    lambda: report(perform(doc, edits.unmark_output, ten.id)),
                )
            )
        else:
            out.append(
                (
                    "Mark as Graph Output",
                    lambda: report(perform(doc, edits.mark_output, ten.id)),
                )
            )
    out.append(
        (
            "Add Metadata Key...",
            lambda: ask_and(
                "Add metadata",
                "dotted.key = JSON value",
                lambda key, value: perform(doc, edits.set_metadata, key, value, **owner),
            ),
        )
    )
    key = metadata_key(item)
    if key:
        out.append(
            (
                f"Delete Metadata '{key}'",
                lambda: report(perform(doc, edits.delete_metadata, key, **owner)),
            )
        )
    return out


def metadata_key(item: QTreeWidgetItem | None) -> str:
    """The dotted metadata key of a row under the Metadata root ("" for other rows)."""
    parts = []
    while item is not None and item.parent() is not None:
        parts.append(cell_text(item, 0))
        item = item.parent()
    if item is None or item.text(0) != "Metadata":
        return ""
    return ".".join(reversed(parts))
