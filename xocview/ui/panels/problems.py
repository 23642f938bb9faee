"""The Problems pane: what `xocview check` finds in the current graph, kept up to date.

Each finding is a row (severity, place, message); clicking one selects the node or tensor it
names, expanding the groups around it.
"""

from __future__ import annotations

import re
from typing import cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from xocview.errors import shorten_message
from xocview.model import Finding
from xocview.ui.document import Document
from xocview.ui.panels import follow

__all__ = ["ProblemsPanel", "place_target"]

_PLACE = re.compile(r"^(nodes|tensors)\[(\d+)\]")


def place_target(place: str) -> tuple[str, int] | None:
    """("node" | "tensor", position) named by a finding's place, or None for graph-level ones."""
    m = _PLACE.match(place)
    if not m:
        return None
    return ("node" if m.group(1) == "nodes" else "tensor"), int(m.group(2))


class ProblemsPanel(QWidget):
    """Follows one document; re-validates after every edit."""

    jumped = Signal()
    found = Signal(int)  # findings of the document shown, after each check

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: Document | None = None
        self.findings: list[Finding] = []
        self.summary = QLabel(self)
        self.list = QListWidget(self)
        self.list.itemActivated.connect(self._jump)
        self.list.itemClicked.connect(self._jump)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.list)

    def set_document(self, doc: Document | None) -> None:
        follow(self.doc, doc, "facts_changed", self.refresh)
        self.doc = follow(self.doc, doc, "model_changed", self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.list.clear()
        doc = self.doc
        found = doc.fact("validate") if doc else []
        if found is None:  # a big graph's check runs in the background: facts_changed follows
            self.findings = []
            self.summary.setText("Checking the graph...")
            return
        self.findings = cast(list[Finding], found)
        errors = sum(f.severity == "error" for f in self.findings)
        warnings = len(self.findings) - errors
        self.summary.setText(f"{errors} errors, {warnings} warnings" if self.doc else "")
        self.found.emit(len(self.findings))
        for k, f in enumerate(self.findings):
            text = shorten_message(f"{f.severity}  {f.place}: {f.message}")
            item = QListWidgetItem(" ".join(text.splitlines()))
            item.setData(Qt.ItemDataRole.UserRole, k)
            item.setToolTip(shorten_message(f.message))
            self.list.addItem(item)

    def _jump(self, item: QListWidgetItem) -> None:
        if self.doc is None:
            return
        finding = self.findings[int(item.data(Qt.ItemDataRole.UserRole))]
        target = place_target(finding.place)
        if target is None:
            return
        kind, pos = target
        if kind == "node" and pos < len(self.doc.graph.nodes):
            self.doc.reveal(pos)
            self.doc.select_node(pos)
        elif kind == "tensor" and pos < len(self.doc.graph.tensors):
            self.doc.select_tensor(pos)
        self.jumped.emit()
