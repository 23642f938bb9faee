"""The search panel: find nodes and tensors of the current graph and jump to them.

Typing runs the query (debounced); Enter or activating a result reveals the hit (expanding its
collapsed ancestors), selects it and asks the window to centre the view on it (``jumped``).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xocview.errors import shorten, shorten_message
from xocview.model.analyses.search import MAX_HITS, Hit, SearchError, SearchIndex
from xocview.model.analyses.summary import shape_text
from xocview.ui.document import Document

__all__ = ["SearchPanel"]

_HIT_ROLE = Qt.ItemDataRole.UserRole + 1  # ("node" | "tensor", position)
DEBOUNCE_MS = 150
_KEY_PRESS = QEvent.Type.KeyPress


class SearchPanel(QWidget):
    """Follows one document (``set_document``, like the Inspector); ``jumped`` after a jump."""

    jumped = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: Document | None = None
        self._index: SearchIndex | None = None
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find id, op type, attribute, shape, dtype, metadata")
        self.edit.setToolTip(
            "Matches node ids, op types, attribute names and values (kernel_shape, 3, 3 or "
            "3x3), tensor ids, shapes (1x3x224x224), dtypes and metadata values; "
            "case-insensitive unless 'Match case'. Enter jumps to the selected result."
        )
        self.edit.setClearButtonEnabled(True)
        self.regex = QCheckBox("Regex", self)
        self.case = QCheckBox("Match case", self)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.results = QListWidget(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self.run)
        self.edit.textChanged.connect(self._timer.start)
        self.regex.toggled.connect(self._timer.start)
        self.case.toggled.connect(self._timer.start)
        self.edit.returnPressed.connect(self.jump_current)
        self.edit.installEventFilter(self)
        self.results.itemActivated.connect(self._jump_item)
        options = QHBoxLayout()
        options.addWidget(self.regex)
        options.addWidget(self.case)
        options.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.edit)
        layout.addLayout(options)
        layout.addWidget(self.status)
        layout.addWidget(self.results, 1)

    def set_document(self, doc: Document | None) -> None:
        self.doc = doc
        self.invalidate()

    def invalidate(self) -> None:
        """Forget the index (after the graph was edited in place) and search again."""
        self._index = None
        self.run()

    def focus_query(self) -> None:
        self.edit.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.edit.selectAll()

    # -- results ----------------------------------------------------------------------------

    def run(self) -> None:
        """Search now (the timer calls this after typing pauses)."""
        self._timer.stop()
        self.results.clear()
        query = self.edit.text()
        if self.doc is None or not query:
            self.status.setText("" if self.doc is not None else "No graph open")
            return
        if self._index is None or self._index.graph is not self.doc.graph:
            self._index = SearchIndex(self.doc.graph)
        try:
            result = self._index.search(query, self.regex.isChecked(), self.case.isChecked())
        except SearchError as e:
            self.status.setText(str(e))
            return
        for hit in result.hits:
            item = QListWidgetItem(self._label(hit))
            item.setData(_HIT_ROLE, (hit.kind, hit.position))
            item.setToolTip(shorten_message(f"{hit.where}: {hit.text}"))
            self.results.addItem(item)
        if result.hits:
            self.results.setCurrentRow(0)
        n = len(result.hits)
        text = f"{n} result{'s' if n != 1 else ''}"
        self.status.setText(
            f"First {MAX_HITS} results shown; refine the query" if result.truncated else text
        )

    def _label(self, hit: Hit) -> str:
        assert self.doc is not None
        g = self.doc.graph
        if hit.kind == "node":
            label = f"node  {hit.id}  {g.nodes[hit.position].op_type}"
        else:
            t = g.tensors[hit.position]
            label = f"tensor  {hit.id}  {shape_text(t)} {t.dtype}"
        label = shorten_message(label)
        if hit.where == "id":
            return label
        if hit.where.startswith("attribute "):  # which attribute, and its value
            return f"{label}  (matched: {shorten(hit.where)} = {shorten(hit.text, 40)})"
        return f"{label}  (matched: {shorten(hit.where)})"

    def hits(self) -> list[str]:
        """The result rows as shown (what tests and users read)."""
        return [self.results.item(k).text() for k in range(self.results.count())]

    # -- jumping ----------------------------------------------------------------------------

    def jump_current(self) -> None:
        """Enter in the query: run a pending search, then jump to the current result."""
        if self._timer.isActive():
            self.run()
        item = self.results.currentItem() or self.results.item(0)
        if item is not None:
            self._jump_item(item)

    def _jump_item(self, item: QListWidgetItem) -> None:
        kind, pos = item.data(_HIT_ROLE)
        self.jump(kind, pos)

    def jump(self, kind: str, pos: int) -> None:
        """Reveal and select a node, or a tensor (revealing its producer, else a consumer)."""
        doc = self.doc
        if doc is None:
            return
        if kind == "node":
            doc.reveal(pos)
            doc.select_node(pos)
        else:
            anchor = int(doc.graph.index.producer[pos])
            if anchor < 0:
                consumers = doc.graph.index.consumers_of(pos)
                anchor = int(consumers[0]) if len(consumers) else -1
            if anchor >= 0:
                doc.reveal(anchor)
            doc.select_tensor(pos)
        self.jumped.emit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Up and Down in the query walk the results without leaving the line edit."""
        if watched is self.edit and isinstance(event, QKeyEvent) and event.type() == _KEY_PRESS:
            step = {Qt.Key.Key_Down: 1, Qt.Key.Key_Up: -1}.get(Qt.Key(event.key()))
            if step is not None and self.results.count():
                row = max(0, min(self.results.count() - 1, self.results.currentRow() + step))
                self.results.setCurrentRow(row)
                return True
        return super().eventFilter(watched, event)
