"""A comparison in a tab: the current tab's graph left, the picked file's right, the
differences below; headers, summary and keys name the two files (``side_names``).

Both sides are views of documents of their own (the old side a snapshot of the tab it came
from, so that editing that tab leaves the comparison as it was made). A colour selector offers
the time ratio when both graphs carry times of one engine (two runs of one graph).
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from xocview.model.analyses.diff import GraphDiff
from xocview.model.analyses.profile import engine_label
from xocview.ui.compare.colours import DIFFERENCES, RATIO, SideColours
from xocview.ui.compare.names import side_names
from xocview.ui.compare.side import SideView
from xocview.ui.compare.sync import ViewSync
from xocview.ui.document import Document
from xocview.ui.panels.differences import DifferencesPanel

__all__ = ["CompareTab"]


class CompareTab(QWidget):
    """Two synchronised views of a comparison and the list of its differences.

    ``swap_requested`` asks for the same two graphs compared the other way round (the
    comparer makes that tab: the differences are computed again, old and new exchanged)."""

    swap_requested = Signal()

    def __init__(
        self,
        old: Document,
        new: Document,
        diff: GraphDiff,
        parent: QWidget | None = None,
        theme_name: str = "light",
        names: tuple[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.diff = diff
        # what the sides are called: the files' names (told apart when they are alike)
        self.names = names or side_names((old.path, old.title), (new.path, new.title))
        for doc in (old, new):
            doc.set_colour_by("category")  # the comparison's colours, not a heat map
        self.colours = (SideColours(diff, True, self.names), SideColours(diff, False, self.names))
        self.left = SideView(old, self.colours[0], self, theme_name)
        self.right = SideView(new, self.colours[1], self, theme_name)
        self.sync = ViewSync(self.left, self.right, diff)
        self.differences = DifferencesPanel(self)
        self.differences.show_diff(diff, self.names)
        self.differences.chosen.connect(self.sync.show_finding)
        self.mode = QComboBox(self)
        self.mode.addItem("Colour: differences", DIFFERENCES)
        engine = self.colours[0].engine
        if engine:
            right, left = self.names[1], self.names[0]
            self.mode.addItem(f"Colour: time {right} / {left} ({engine_label(engine)})", RATIO)
            self.mode.setCurrentIndex(1)
        self.mode.currentIndexChanged.connect(self._mode_chosen)
        self._layout(old, new)

    def active_side(self) -> SideView:
        """The side that has the keyboard focus, else the left one."""
        return self.right if self.right.hasFocus() else self.left

    def _layout(self, old: Document, new: Document) -> None:
        header = QHBoxLayout()
        for doc, name in zip((old, new), self.names, strict=True):
            label = QLabel(f"<b>{escape(name)}</b>", self)
            label.setTextFormat(Qt.TextFormat.RichText)
            label.setToolTip(str(doc.path) if doc.path is not None else doc.title)
            header.addWidget(label, 1)
        self.swap_button = QPushButton("Swap Sides", self)
        self.swap_button.setToolTip(
            f"Compare the other way round: {self.names[1]} first, then {self.names[0]}"
        )
        self.swap_button.clicked.connect(self.swap_requested)
        header.addWidget(self.swap_button)
        header.addWidget(self.mode)
        sides = QSplitter(Qt.Orientation.Horizontal, self)
        sides.addWidget(self.left)
        sides.addWidget(self.right)
        whole = QSplitter(Qt.Orientation.Vertical, self)
        whole.addWidget(sides)
        whole.addWidget(self.differences)
        whole.setStretchFactor(0, 4)
        whole.setStretchFactor(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(header)
        layout.addWidget(whole, 1)

    @property
    def title(self) -> str:
        return f"{self.names[0]} \u2194 {self.names[1]}"

    def set_mode(self, mode: str) -> None:
        """Colour by DIFFERENCES or, when both runs carry times, by their RATIO."""
        if mode == RATIO and not self.colours[0].engine:
            raise ValueError("the graphs carry no times of one engine to compare")
        for colours in self.colours:
            colours.mode = mode
        for view in (self.left, self.right):
            view.refresh()

    def set_theme(self, name: str) -> None:
        for view in (self.left, self.right):
            view.set_theme(name)

    def _mode_chosen(self, index: int) -> None:
        self.set_mode(str(self.mode.itemData(index)))

    def first_view(self) -> None:
        """Open as a new tab does, then the right side follows the left."""
        self.left.first_view()
        self.sync.follow(0)
