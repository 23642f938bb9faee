"""Saving documents and guarding unsaved changes, for the main window.

A graph opened from ONNX, NNVM or LightNet is never overwritten in another format: Save asks
for a .json path beside the source. Closing a tab or quitting with unsaved changes asks
Save / Discard / Cancel; a failed save keeps the old file (atomic write) and says why.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtWidgets import QFileDialog, QMessageBox, QWidget

from xocview.errors import XocviewError
from xocview.ui.document import Document

__all__ = ["AskPath", "AskUnsaved", "ask_path", "ask_unsaved", "save_document"]

AskPath = Callable[[QWidget, Document], Path | None]
AskUnsaved = Callable[[QWidget, Document], str]  # "save" | "discard" | "cancel"


def default_json_path(doc: Document) -> Path:
    """Beside the source, with a .json name that does not clobber the source itself."""
    if doc.path is None:
        return Path.home() / f"{doc.graph.name or 'graph'}.json"
    if doc.path.suffix.lower() == ".json" and doc.format != "XOC JSON":
        return doc.path.with_name(doc.path.stem + ".xoc.json")
    return doc.path.with_suffix(".json")


def ask_path(parent: QWidget, doc: Document) -> Path | None:
    name, _ = QFileDialog.getSaveFileName(
        parent, "Save as XOC JSON", str(default_json_path(doc)), "XOC JSON (*.json)"
    )
    if not name:
        return None
    path = Path(name)
    return path if path.suffix.lower() == ".json" else path.with_suffix(".json")


def ask_unsaved(parent: QWidget, doc: Document) -> str:
    box = QMessageBox(
        QMessageBox.Icon.Question,
        "Unsaved changes",
        f"{doc.title} has unsaved changes.",
        parent=parent,
    )
    box.setStandardButtons(
        QMessageBox.StandardButton.Save
        | QMessageBox.StandardButton.Discard
        | QMessageBox.StandardButton.Cancel
    )
    answer = box.exec()
    return {
        QMessageBox.StandardButton.Save: "save",
        QMessageBox.StandardButton.Discard: "discard",
    }.get(QMessageBox.StandardButton(answer), "cancel")


def save_document(
    parent: QWidget,
    doc: Document,
    ask: AskPath,
    save_as: bool = False,
    report: Callable[[str], None] | None = None,
) -> bool:
    """Save ``doc``; True when it was written. The source of another format is never the target."""
    path = None if save_as else doc.save_path
    if path is None:
        path = ask(parent, doc)
        if path is None:
            return False
    if doc.path is not None and doc.format != "XOC JSON" and path.resolve() == doc.path.resolve():
        if report:
            report(f"{path}: refusing to overwrite the {doc.format} source; choose another name")
        return False
    try:
        doc.save_to(path)
    except XocviewError as e:
        if report:
            report(str(e))
        return False
    return True
