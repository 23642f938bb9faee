"""The Differences list of a comparison: findings grouped by kind, counts first.

Each finding is a row under its kind (``node changed (83)``), its changes rows below it;
clicking a finding (or one of its changes) emits ``chosen`` with it, and the comparison selects
its nodes on both sides.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from xocview.errors import shorten_message
from xocview.model.analyses.diff import KINDS, Finding, GraphDiff

__all__ = ["DifferencesPanel"]

_ROLE = Qt.ItemDataRole.UserRole
_OPEN_UP_TO = 200  # kinds with at most this many findings are shown expanded


class DifferencesPanel(QWidget):
    """Lists one comparison's findings."""

    chosen = Signal(object)  # the Finding clicked

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.findings: list[Finding] = []
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)  # file names are not markup
        self.tree = QTreeWidget(self)
        self.tree.setHeaderHidden(True)
        self.tree.setUniformRowHeights(True)  # thousands of rows scroll smoothly
        self.tree.itemClicked.connect(self._clicked)
        self.tree.itemActivated.connect(self._clicked)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        layout.addWidget(self.tree)

    def show_diff(self, diff: GraphDiff, names: tuple[str, str] = ("old", "new")) -> None:
        """Fill the list with ``diff``'s findings; the summary names the two files."""
        self.tree.clear()
        self.findings = list(diff.findings)
        counts = diff.counts()
        if diff.equal:
            self.summary.setText(
                f"{names[0]} and {names[1]} are equal ({diff.matched_nodes()} nodes matched)."
            )
        else:
            parts = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
            self.summary.setText(
                f"{len(self.findings)} differences from {names[0]} to {names[1]}: {parts}"
            )
        by_kind: dict[str, QTreeWidgetItem] = {}
        for kind in KINDS:
            if counts[kind]:
                top = QTreeWidgetItem([f"{kind} ({counts[kind]})"])
                self.tree.addTopLevelItem(top)
                by_kind[kind] = top
        for k, f in enumerate(self.findings):
            row = QTreeWidgetItem([shorten_message(f.title())])
            row.setData(0, _ROLE, k)
            row.setToolTip(0, shorten_message(f.text()))
            for c in f.changes:
                sub = QTreeWidgetItem([shorten_message(c.text())])
                sub.setData(0, _ROLE, k)
                row.addChild(sub)
            by_kind[f.kind].addChild(row)
        for kind, top in by_kind.items():
            top.setExpanded(counts[kind] <= _OPEN_UP_TO)

    def item_of(self, index: int) -> QTreeWidgetItem | None:
        """The row of finding ``index`` (for tests and keyboard users)."""
        for k in range(self.tree.topLevelItemCount()):
            top = self.tree.topLevelItem(k)
            rows = [top.child(j) for j in range(top.childCount())] if top is not None else []
            for row in rows:
                if row is not None and row.data(0, _ROLE) == index:
                    return row
        return None

    def _clicked(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        index = item.data(0, _ROLE)
        if index is not None:
            self.chosen.emit(self.findings[int(index)])
