"""The inspector: the selected node, tensor or (with nothing selected) the whole graph.

A tree of name/value rows; tensors and nodes named in it are links (double-click selects
them), and every value can be copied (Ctrl+C or the context menu). A weight with values also
gets statistics rows, a histogram and a "Save as .npy..." button under the tree.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QPoint, Qt
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

from xocview.errors import FormatError, XocviewError, shorten
from xocview.formats.atomic import write_atomic
from xocview.model import DTYPES, Tensor, edits
from xocview.model.analyses import opfacts
from xocview.model.analyses.summary import shape_text, summarize
from xocview.model.analyses.tensor_stats import TensorStats, stats
from xocview.ui.commands import perform
from xocview.ui.document import Document
from xocview.ui.panels import follow
from xocview.ui.panels.histogram import HistogramWidget

__all__ = ["Inspector", "cell_text", "npy_name", "write_npy"]

_LINK_ROLE = Qt.ItemDataRole.UserRole + 1  # ("node" | "tensor", position)
_FULL_ROLE = Qt.ItemDataRole.UserRole + 2  # the whole text of a cell shown shortened
# A cell shows at most this many characters (a file may hold a megabyte-long name); the whole
# value stays in the tooltip up to TOOLTIP_CHARS, and Copy always copies all of it.
CELL_CHARS = 200
TOOLTIP_CHARS = 2000


class Inspector(QWidget):
    """Follows one document's selection; ``set_document`` switches documents (tabs)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: Document | None = None
        self.tree = QTreeWidget(self)
        self.tree.setColumnCount(3)
        self.tree.setHeaderLabels(["Property", "Value", "Type"])
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
        self.tree.setEditTriggers(
            QTreeWidget.EditTrigger.EditKeyPressed | QTreeWidget.EditTrigger.SelectedClicked
        )
        self._editors: dict[int, Callable[[str], str | None]] = {}
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
        self._editors = {}
        self.values = None
        self.values_strip.hide()
        doc = self.doc
        if doc is None:
            return
        if doc.selected_node >= 0:
            self._node(doc, doc.selected_node)
        elif doc.selected_tensor >= 0:
            self._tensor(doc, doc.selected_tensor)
        else:
            self._graph(doc)
        self.tree.expandToDepth(0)

    def rows(self) -> dict[str, str]:
        """Top-level rows as {property: value} (what tests and users read)."""
        out = {}
        for k in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(k)
            if item is not None:
                out[item.text(0)] = item.text(1)
        return out

    def _row(
        self,
        parent: QTreeWidget | QTreeWidgetItem,
        name: str,
        value: object = "",
        link: tuple[str, int] | None = None,
    ) -> QTreeWidgetItem:
        text = str(value)
        item = QTreeWidgetItem([shorten(name, CELL_CHARS), shorten(text, CELL_CHARS)])
        item.setToolTip(1, text if len(text) <= TOOLTIP_CHARS else shorten(text, TOOLTIP_CHARS))
        for column, full in ((0, name), (1, text)):
            if len(full) > CELL_CHARS:
                item.setData(column, _FULL_ROLE, full)
        if link is not None:
            item.setData(0, _LINK_ROLE, link)
            font = item.font(1)
            font.setUnderline(True)
            item.setFont(1, font)
        if isinstance(parent, QTreeWidget):
            parent.addTopLevelItem(item)
        else:
            parent.addChild(item)
        return item

    def _tree(
        self,
        parent: QTreeWidget | QTreeWidgetItem,
        name: str,
        value: Any,
        edit: Callable[[str, Any], str | None] | None = None,
        key: str | None = None,
    ) -> None:
        """Nested metadata as an expandable tree; with ``edit``, leaves edit in place
        (``edit(dotted_key, value)`` runs the model edit and returns a refusal or None).
        ``key`` is the dotted path of ``parent`` (None: this row is the tree's root)."""
        path = "" if key is None else (f"{key}.{name}" if key else name)
        if isinstance(value, dict):
            node = self._row(parent, name, f"{{{len(value)}}}" if value else "{}")
            for k, v in value.items():
                self._tree(node, str(k), v, edit, path)
        elif isinstance(value, list) and value and any(isinstance(v, (dict, list)) for v in value):
            node = self._row(parent, name, f"[{len(value)}]")
            for k, v in enumerate(value):
                self._tree(node, f"[{k}]", v)
        else:
            item = self._row(
                parent,
                name,
                json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else value,
            )
            if edit is not None and path:
                self._editable(item, functools.partial(_edit_leaf, edit, path))

    def _editable(self, item: QTreeWidgetItem, on_edit: Callable[[str], str | None]) -> None:
        """Let the value of ``item`` be edited; ``on_edit(text)`` returns a refusal or None."""
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        self._editors[id(item)] = on_edit

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
        doc = self.doc
        if doc is None:
            return []
        g = doc.graph
        out: list[tuple[str, Callable[[], None]]] = []
        owner: dict[str, str] = {}
        if doc.selected_node >= 0:
            node_id = g.nodes[doc.selected_node].id
            owner = {"node": node_id}
            out.append(
                (
                    "Add Attribute...",
                    lambda: self._ask_and(
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
                        lambda: self._report(perform(doc, edits.remove_attribute, node_id, name)),
                    )
                )
        elif doc.selected_tensor >= 0:
            ten = g.tensors[doc.selected_tensor]
            owner = {"tensor": ten.id}
            if doc.selected_tensor in g.outputs:
                out.append(
                    (
                        "Remove from Graph Outputs",
                        lambda: self._report(perform(doc, edits.unmark_output, ten.id)),
                    )
                )
            else:
                out.append(
                    (
                        "Mark as Graph Output",
                        lambda: self._report(perform(doc, edits.mark_output, ten.id)),
                    )
                )
        out.append(
            (
                "Add Metadata Key...",
                lambda: self._ask_and(
                    "Add metadata",
                    "dotted.key = JSON value",
                    lambda key, value: perform(doc, edits.set_metadata, key, value, **owner),
                ),
            )
        )
        key = self._metadata_key(item)
        if key:
            out.append(
                (
                    f"Delete Metadata '{key}'",
                    lambda: self._report(perform(doc, edits.delete_metadata, key, **owner)),
                )
            )
        return out

    def _metadata_key(self, item: QTreeWidgetItem | None) -> str:
        """The dotted metadata key of a row under the Metadata root ("" for other rows)."""
        parts = []
        while item is not None and item.parent() is not None:
            parts.append(cell_text(item, 0))
            item = item.parent()
        if item is None or item.text(0) != "Metadata":
            return ""
        return ".".join(reversed(parts))

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
        on_edit = self._editors.get(id(item))
        if column != 1 or on_edit is None:
            return
        refusal = on_edit(item.text(1))
        self._report(refusal)
        if refusal:
            self.refresh()  # show the unchanged value again

    def _tensor_row(self, parent: QTreeWidgetItem, doc: Document, t: int) -> None:
        ten = doc.graph.tensors[t]
        self._row(parent, ten.id, f"{ten.kind}  {shape_text(ten)}  {ten.dtype}", ("tensor", t))

    def _node(self, doc: Document, i: int) -> None:
        g = doc.graph
        node = g.nodes[i]
        t = self.tree
        self._editable(
            self._row(t, "Node", node.id),
            lambda text: perform(doc, edits.rename_node, node.id, text),
        )
        self._row(t, "Op type", node.op_type)
        attrs = self._row(t, "Attributes", str(len(node.attributes)))
        for name, value in node.attributes.items():
            self._tree(attrs, name, value)
            row = attrs.child(attrs.childCount() - 1)
            if row is not None and row.childCount() == 0:
                self._editable(
                    row,
                    functools.partial(_edit_attribute, doc, node.id, name),
                )
            if row is not None:
                row.setText(2, attribute_type(value))
        ins = self._row(t, "Inputs", str(len(node.inputs)))
        for k in node.inputs:
            self._tensor_row(ins, doc, k)
        outs = self._row(t, "Outputs", str(len(node.outputs)))
        for k in node.outputs:
            self._tensor_row(outs, doc, k)
        if doc.hierarchy.is_group[i]:
            self._row(t, "Group", f"{int(doc.hierarchy.child_count[i])} children")
        else:
            self._row(t, "Category", opfacts.category(node.op_type))
            ops, assumed = opfacts.flops_assuming(g, i, 1)
            self._row(t, "FLOPs", opfacts.flops_text(ops, assumed))
            self._row(t, "Parameters", f"{opfacts.parameters(g, i):,}")
        ms = doc.times_ms()[i]
        if np.isfinite(ms):  # measured by a run or stored in the file; a group sums its leaves
            total = " (sum of its leaves)" if doc.hierarchy.is_group[i] else ""
            self._row(t, "Time (CPU)", f"{ms:.3f} ms{total}")
        self._tree(
            t,
            "Metadata",
            node.metadata,
            lambda key, value: perform(doc, edits.set_metadata, key, value, node=node.id),
        )

    def _tensor(self, doc: Document, ti: int) -> None:
        g = doc.graph
        ten = g.tensors[ti]
        t = self.tree
        self._editable(
            self._row(t, "Tensor", ten.id),
            lambda text: perform(doc, edits.rename_tensor, ten.id, text),
        )
        self._editable(
            self._row(t, "Kind", ten.kind),
            lambda text: perform(doc, edits.set_kind, ten.id, text.strip()),
        )
        self._editable(
            self._row(t, "Shape", shape_text(ten)),
            lambda text: perform(doc, edits.set_shape, ten.id, parse_shape(text)),
        )
        self._editable(
            self._row(t, "Dtype", ten.dtype),
            lambda text: perform(doc, edits.set_dtype, ten.id, text.strip()),
        )
        bits = DTYPES[ten.dtype].bits if ten.dtype in DTYPES else None
        if bits and all(d >= 0 for d in ten.shape) and not ten.metadata.get("rank_unknown"):
            count = int(np.prod(ten.shape, dtype=np.int64))
            self._row(t, "Size", f"{count * bits // 8:,} bytes ({count:,} elements)")
        if ten.has_data:
            self._values(ten)
        p = int(g.index.producer[ti])
        self._row(
            t, "Producer", g.nodes[p].id if p >= 0 else "(none)", ("node", p) if p >= 0 else None
        )
        cons = self._row(t, "Consumers", str(len(g.index.consumers_of(ti))))
        for c in g.index.consumers_of(ti).tolist():
            self._row(cons, g.nodes[c].id, g.nodes[c].op_type, ("node", c))
        self._tree(
            t,
            "Metadata",
            ten.metadata,
            lambda key, value: perform(doc, edits.set_metadata, key, value, tensor=ten.id),
        )

    def _values(self, ten: Tensor) -> None:
        """Statistics rows and the histogram; reads lazy values now, on selection only."""
        t = self.tree
        try:
            data = ten.data
        except (XocviewError, OSError, ValueError) as e:  # missing or damaged external data
            self._row(t, "Values", str(e))
            return
        if data is None:
            return
        self.values = data
        self.values_strip.show()
        s = stats(data)
        if s is None:
            self._row(t, "Values", f"{data.dtype} values have no statistics")
            self.histogram.set_histogram(np.zeros(0), np.zeros(0))
            return
        if s.sampled:
            self._row(t, "Values", f"statistics of {s.sample_count:,} of {s.count:,} (strided)")
        for name, value in _stat_rows(s, data.dtype):
            self._row(t, name, value)
        self.histogram.set_histogram(s.histogram, s.bin_edges)

    def _graph(self, doc: Document) -> None:
        g = doc.graph
        s = summarize(g)
        t = self.tree
        self._row(t, "Graph", s.name)
        self._row(t, "Id", s.id)
        self._row(t, "File", str(doc.path) if doc.path else "")
        self._row(t, "Format", doc.format)
        self._row(t, "Nodes", f"{s.num_nodes} ({s.num_groups} groups, depth {s.hierarchy_depth})")
        self._row(t, "Tensors", f"{s.num_tensors}")
        self._row(t, "Parameters", f"{s.parameters:,}")
        total, unknown, assumed = opfacts.graph_flops_assuming(g, 1)
        self._row(t, "FLOPs", opfacts.flops_text(total, assumed, unknown))
        ins = self._row(t, "Inputs", str(len(g.inputs)))
        for k in g.inputs:
            self._tensor_row(ins, doc, k)
        outs = self._row(t, "Outputs", str(len(g.outputs)))
        for k in g.outputs:
            self._tensor_row(outs, doc, k)
        ops = self._row(t, "Operators", str(len(s.op_histogram)))
        for op, n in s.op_histogram:
            self._row(ops, op, n)
        self._tree(
            t,
            "Metadata",
            g.metadata,
            lambda key, value: perform(doc, edits.set_metadata, key, value),
        )

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
        link = item.data(0, _LINK_ROLE)
        if not link or self.doc is None:
            return
        kind, pos = link
        if kind == "node":
            self.doc.reveal(pos)
            self.doc.select_node(pos)
        else:
            self.doc.select_tensor(pos)


def cell_text(item: QTreeWidgetItem, column: int) -> str:
    """The whole text of a cell, also when the tree shows it shortened."""
    full = item.data(column, _FULL_ROLE)
    return full if isinstance(full, str) else item.text(column)


def _stat_rows(s: TensorStats, dtype: np.dtype) -> list[tuple[str, str]]:
    """Name/value rows for the statistics; NaN and Inf counts only when there are some."""
    whole = dtype.kind in "biu"
    rows = [
        ("Min", _number(s.min, whole)),
        ("Max", _number(s.max, whole)),
        ("Mean", _number(s.mean)),
        ("Std", _number(s.std)),
        ("Sparsity", _sparsity(s)),
    ]
    if s.nan_count:
        rows.append(("NaN", f"{s.nan_count:,}"))
    if s.inf_count:
        rows.append(("Inf", f"{s.inf_count:,}"))
    return rows


def _sparsity(s: TensorStats) -> str:
    if not s.sample_count:
        return "n/a (no values)"
    return f"{s.sparsity:.2%} ({s.zero_count:,} zero{'' if s.zero_count == 1 else 's'})"


def _number(value: float, whole: bool = False) -> str:
    if math.isnan(value):
        return "n/a (no finite values)"
    if whole:
        return str(int(value))
    return f"{value:.7g}"


def npy_name(tensor_id: str) -> str:
    """A file name for a tensor's values: characters unsafe in file names become ``_``."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", tensor_id).strip("._")
    return (stem or "tensor") + ".npy"


def write_npy(array: np.ndarray, path: Path) -> None:
    """``np.save`` to ``path`` atomically (see formats.atomic).

    Raises FormatError naming the path when the folder is missing or not writable, or when the
    values are Python objects (saving them would need pickle, which np.load refuses by default).
    """
    try:
        write_atomic(path, lambda f: np.save(f, array, allow_pickle=False))
    except ValueError as e:  # object arrays
        raise FormatError(str(path), "", f"cannot save: {e}") from e


def attribute_type(value: object) -> str:
    """The ONNX attribute type a value has (int, float, string, tensor, graph, or lists)."""
    if isinstance(value, bool):
        return "int"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        if "tensor" in value:
            return "tensor"
        if "graph" in value:
            return "graph"
        return "object"
    if isinstance(value, list):
        kinds = {attribute_type(v) for v in value}
        return f"{kinds.pop()}s" if len(kinds) == 1 else "list"
    return type(value).__name__


def _edit_leaf(edit: Callable[[str, Any], str | None], path: str, text: str) -> str | None:
    return edit(path, parse_value(text))


def _edit_attribute(doc: Document, node_id: str, name: str, text: str) -> str | None:
    return perform(doc, edits.set_attribute, node_id, name, parse_value(text))


def parse_value(text: str) -> Any:
    """A typed value from an edited cell: JSON when it parses (3, 1.5, [1, 1], "x"), else text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def parse_shape(text: str) -> list[int]:
    """``1x3x224x224``, ``1, 3, 224, 224`` or ``[1, 3]``; ``?`` for an unknown dimension."""
    parts = [
        p for p in text.replace("[", "").replace("]", "").replace("x", ",").split(",") if p.strip()
    ]
    if text.strip() == "scalar":
        return []
    try:
        return [-1 if p.strip() in ("?", "-1") else int(p) for p in parts]
    except ValueError:
        return [text]  # type: ignore[list-item]  # the edit refuses it with its own message
