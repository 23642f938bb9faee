"""The inspector widget: the tree, the message line, the values strip, copy and follow."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xocview.errors import FormatError, XocviewError
from xocview.model import Tensor
from xocview.model.analyses.tensor_stats import stats
from xocview.ui.document import Document
from xocview.ui.panels import follow
from xocview.ui.panels.histogram import HistogramWidget
from xocview.ui.panels.inspector.cells import LINK_ROLE, Cells, cell_text, parse_value
from xocview.ui.panels.inspector.editing import structural_actions
from xocview.ui.panels.inspector.selection import graph_rows, node_rows, tensor_rows
from xocview.ui.panels.inspector.values import npy_name, stat_rows, write_npy

__all__ = ["Inspector"]


class Inspector(QWidget):
    """Follows one document's selection; ``set_document`` switches documents (tabs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: Document | None = None
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Property", "Value", "Type / role"])
        # Names that differ only at the end (conv_4a_double_3x3_0 and _1) stay apart.
        self.tree.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.tree.setColumnWidth(0, 140)
        self.tree.setColumnWidth(1, 170)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._menu)
        copy = QAction("Copy value", self.tree)
        copy.setShortcut(QKeySequence.StandardKey.Copy)
        copy.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        copy.triggered.connect(self.copy_value)
        self.tree.addAction(copy)
        self.tree.itemDoubleClicked.connect(self._follow)
        self.tree.itemChanged.connect(self._edited)
        # a double-click edits an editable value at once (a link cell follows its link)
        self.tree.setEditTriggers(
            QTreeWidget.EditTrigger.EditKeyPressed
            | QTreeWidget.EditTrigger.SelectedClicked
            | QTreeWidget.EditTrigger.DoubleClicked
        )
        self.cells = Cells(self.tree)
        self.message = QLabel(self)
        self.message.setWordWrap(True)
        self.message.setStyleSheet("color: #b3261e")
        self.message.hide()
        self.values: np.ndarray | None = None  # the shown weight's values, for Save
        self.histogram = HistogramWidget(self)
        self.save_button = QPushButton("Save as .npy...", self)
        self.save_button.clicked.connect(self.ask_save_values)
        self.values_strip = QWidget(self)
        strip = QVBoxLayout(self.values_strip)
        strip.setContentsMargins(4, 2, 4, 4)
        strip.addWidget(self.histogram)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.save_button)
        strip.addLayout(buttons)
        self.values_strip.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.message)
        layout.addWidget(self.tree)
        layout.addWidget(self.values_strip)

    def set_document(self, doc: Document | None) -> None:
        follow(self.doc, doc, "file_changed", self.refresh)  # File and Format rows
        follow(self.doc, doc, "facts_changed", self.refresh)  # the graph's summary rows
        self.doc = follow(self.doc, doc, "selection_changed", self.refresh)
        self.refresh()

    # -- rows -------------------------------------------------------------------------------

    def refresh(self) -> None:
        self.tree.blockSignals(True)
        try:
            self._refresh()
        finally:
            self.tree.blockSignals(False)

    def _refresh(self) -> None:
        self.tree.clear()
        self.cells.editors = {}
        self.values = None
        self.values_strip.hide()
        doc = self.doc
        if doc is None:
            return
        if doc.selected_node >= 0:
            node_rows(self.cells, doc, doc.selected_node)
        elif doc.selected_tensor >= 0:
            tensor_rows(self.cells, doc, doc.selected_tensor, self._values)
        else:
            graph_rows(self.cells, doc)
        self.tree.expandToDepth(0)

    def rows(self) -> dict[str, str]:
        """Top-level rows as {property: value} (what tests and users read)."""
        out = {}
        for k in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(k)
            if item is not None:
                out[item.text(0)] = item.text(1)
        return out

    # -- structural edits from the context menu ----------------------------------------------

    def _menu(self, pos: QPoint) -> None:
        doc = self.doc
        if doc is None:
            return
        menu = QMenu(self.tree)
        menu.addAction("Copy value", self.copy_value)
        item = self.tree.itemAt(pos)
        for text, action in self.structural_actions(item):
            menu.addAction(text, action)
        menu.exec(self.tree.viewport().mapToGlobal(pos))

    def structural_actions(
        self, item: QTreeWidgetItem | None
    ) -> list[tuple[str, Callable[[], None]]]:
        """The edits the context menu offers for ``item`` (tests call them directly)."""
        if self.doc is None:
            return []
        return structural_actions(self.doc, item, self._ask_and, self._report)

    def _ask_and(self, title: str, label: str, run: Callable[[str, Any], str | None]) -> None:
        text, ok = QInputDialog.getText(self, title, label)
        if ok and "=" in text:
            name, value = text.split("=", 1)
            self._report(run(name.strip(), parse_value(value.strip())))
        elif ok:
            self._report(f"'{text}': write it as name = value")

    def _report(self, refusal: str | None) -> None:
        self.message.setText(refusal or "")
        self.message.setVisible(bool(refusal))

    def _edited(self, item: QTreeWidgetItem, column: int) -> None:
        on_edit = self.cells.editors.get(id(item))
        if column != 1 or on_edit is None:
            return
        path = _row_path(item)
        refusal = on_edit(item.text(1))
        self._report(refusal)
        if refusal:
            self.refresh()  # show the unchanged value again
        # the edit rebuilt the rows: the edited one is current again and the keyboard stays
        # here, rather than falling to the next widget (the Search field)
        QTimer.singleShot(0, lambda: self._return_to(path))

    def _return_to(self, path: list[str]) -> None:
        item = _find_row(self.tree, path)
        if item is not None:
            self.tree.setCurrentItem(item, 1)
        self.tree.setFocus(Qt.FocusReason.OtherFocusReason)

    def _values(self, ten: Tensor) -> None:
        """Statistics rows and the histogram; reads lazy values now, on selection only."""
        t = self.tree
        try:
            data = ten.data
        except (XocviewError, OSError, ValueError) as e:  # missing or damaged external data
            self.cells.row(t, "Values", str(e))
            return
        if data is None:
            return
        self.values = data
        self.values_strip.show()
        s = stats(data)
        if s is None:
            self.cells.row(t, "Values", f"{data.dtype} values have no statistics")
            self.histogram.set_histogram(np.zeros(0), np.zeros(0))
            return
        if s.sampled:
            self.cells.row(
                t, "Values", f"statistics of {s.sample_count:,} of {s.count:,} (strided)"
            )
        for name, value in stat_rows(s, data.dtype):
            self.cells.row(t, name, value)
        self.histogram.set_histogram(s.histogram, s.bin_edges)

    # -- actions ----------------------------------------------------------------------------

    def ask_save_values(self) -> None:
        """Ask where to save the shown values (default: the tensor's id in the model's folder)."""
        doc = self.doc
        if self.values is None or doc is None or doc.selected_tensor < 0:
            return
        folder = doc.path.parent if doc.path is not None else Path.home()
        name = npy_name(doc.graph.tensors[doc.selected_tensor].id)
        chosen, _ = QFileDialog.getSaveFileName(
            self, "Save values as .npy", str(folder / name), "NumPy arrays (*.npy)"
        )
        if not chosen:
            return
        path = Path(chosen)
        if path.suffix.lower() != ".npy":
            path = path.with_name(path.name + ".npy")
        try:
            self.save_values(path)
        except XocviewError as e:
            QMessageBox.warning(self, "Cannot save values", str(e))

    def save_values(self, path: Path) -> None:
        """Write the shown tensor's values to ``path``; raises FormatError as ``write_npy``."""
        if self.values is None:
            raise FormatError(str(path), "", "cannot save: the selection has no values")
        write_npy(self.values, path)

    def copy_value(self) -> None:
        item = self.tree.currentItem()
        if item is not None:
            QGuiApplication.clipboard().setText(cell_text(item, 1) or cell_text(item, 0))

    def _follow(self, item: QTreeWidgetItem, _column: int) -> None:
        link = item.data(0, LINK_ROLE)
        if not link or self.doc is None:
            return
        kind, pos = link
        if kind == "node":
            self.doc.reveal(pos)
            self.doc.select_node(pos)
        else:
            self.doc.select_tensor(pos)


def _row_path(item: QTreeWidgetItem) -> list[str]:
    """The property names from the top row down to ``item``."""
    names: list[str] = []
    at: QTreeWidgetItem | None = item
    while at is not None:
        names.append(at.text(0))
        at = at.parent()
    return names[::-1]


def _find_row(tree: QTreeWidget, path: list[str]) -> QTreeWidgetItem | None:
    """The row at ``path`` in the rebuilt tree, or None when it is gone (a renamed key)."""
    rows = [tree.topLevelItem(k) for k in range(tree.topLevelItemCount())]
    item = None
    for name in path:
        item = next((r for r in rows if r is not None and r.text(0) == name), None)
        if item is None:
            return None
        rows = [item.child(k) for k in range(item.childCount())]
    return item
