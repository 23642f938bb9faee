"""Undo commands: every change to a graph goes through one, so that undo restores it exactly.

A command wraps a model-level edit: something with ``apply(graph)`` and ``revert(graph)``
(xocview.model edits provide them) and a text for the Edit menu and the history pane.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtGui import QUndoCommand

from xocview.model import Graph
from xocview.ui.document import Document

__all__ = ["EditCommand", "Reversible"]


class Reversible(Protocol):
    """What a model edit offers: apply it, take it back, and say what it does."""

    description: str

    def apply(self, graph: Graph) -> None: ...

    def revert(self, graph: Graph) -> None: ...


class EditCommand(QUndoCommand):
    """One edit on the undo stack; the document refreshes its views after redo and undo."""

    def __init__(self, doc: Document, edit: Reversible) -> None:
        super().__init__(edit.description)
        self.doc = doc
        self.edit = edit
        self._first = True

    def redo(self) -> None:
        if self._first:  # the edit function already applied it when it was checked
            self._first = False
        else:
            self.edit.apply(self.doc.graph)
        self.doc.after_edit()

    def undo(self) -> None:
        self.edit.revert(self.doc.graph)
        self.doc.after_edit()
