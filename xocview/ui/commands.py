"""Undo commands: every change to a graph goes through one, so that undo restores it exactly.

A command wraps a model-level edit: something with ``apply(graph)`` and ``revert(graph)``
(xocview.model edits provide them) and a text for the Edit menu and the history pane.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any, Protocol

from PySide6.QtGui import QUndoCommand

from xocview.errors import XocviewError
from xocview.model import Graph
from xocview.ui.document import Document

__all__ = ["EditCommand", "Reversible", "perform"]


class Reversible(Protocol):
    """What a model edit offers: apply it, take it back, and say what it does."""

    @property
    def description(self) -> str: ...

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
        self._refresh()

    def undo(self) -> None:
        self.edit.revert(self.doc.graph)
        self._refresh()

    def _refresh(self) -> None:
        # Qt calls redo/undo from C++: an exception escaping here would take the process down,
        # so a failing refresh (a bug) is printed and the graph itself stays consistent.
        try:
            self.doc.after_edit()
        except Exception:
            traceback.print_exc()


def perform(
    doc: Document, edit_fn: Callable[..., Reversible], *args: Any, **kwargs: Any
) -> str | None:
    """Run a model edit on ``doc`` and push it on its undo stack; the refusal text if refused.

    The model's edit functions check everything first, so a refused edit changed nothing.
    """
    try:
        edit = edit_fn(doc.graph, *args, **kwargs)
    except XocviewError as e:
        return str(e)
    doc.undo_stack.push(EditCommand(doc, edit))
    return None
