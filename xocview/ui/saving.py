"""Saving documents and guarding unsaved changes, for the main window.

A graph opened from ONNX, NNVM or LightNet is never overwritten: Save asks for a path (XOC JSON
beside the source, or an ONNX file of another name); an ONNX file the document was saved as is
saved again. Closing a tab or quitting with unsaved changes asks Save / Discard / Cancel; a
failed save keeps the old file (atomic write) and says why.
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


_FILTERS = {"XOC JSON (*.json)": ".json", "ONNX (*.onnx)": ".onnx"}


def ask_path(parent: QWidget, doc: Document) -> Path | None:
    """The file to save to: XOC JSON, or ONNX (with the weights) picked by suffix or filter."""
    name, chosen = QFileDialog.getSaveFileName(
        parent, "Save As", str(default_json_path(doc)), ";;".join(_FILTERS)
    )
    if not name:
        return None
    path = Path(name)
    if path.suffix.lower() in _FILTERS.values():
        return path
    return path.with_suffix(_FILTERS.get(chosen, ".json"))


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
    notify: Callable[[str], None] | None = None,
) -> bool:
    """Save ``doc``; True when it was written. A source of another format that this document
    did not write is never the target. ``notify`` gets the notes of a save that could not
    keep everything (ONNX: weights without values, groups)."""
    path = None if save_as else doc.save_path
    if path is None:
        path = ask(parent, doc)
        if path is None:
            return False
    if doc.path is not None and doc.save_path is None and path.resolve() == doc.path.resolve():
        if report:
            report(f"{path}: refusing to overwrite the {doc.format} source; choose another name")
        return False
    try:
        notes = doc.save_to(path)
    except XocviewError as e:
        if report:
            report(str(e))
        return False
    if notes and notify:
        notify(f"{path} was written, but:\n" + "\n".join(f"- {n}" for n in notes))
    return True
