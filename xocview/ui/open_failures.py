"""One non-modal list of the files that could not be opened, instead of a box per file.

Ten damaged files dropped on the window give one list of ten lines (``file: place: problem``)
while the good files open in tabs; nothing waits for the user to click OK.
"""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtGui import QGuiApplication, QTextOption
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

__all__ = ["OpenFailures"]


class OpenFailures(QDialog):
    """Collects load failures while it is shown; closing it starts the next list afresh."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Cannot open files")
        self.setModal(False)
        self.messages: list[str] = []
        self.heading = QLabel(self)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        # wrapped, never scrolled sideways: each line shows its start, the file's name (a long
        # message scrolled to its end read "xternal data..." and named no file)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.text.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        copy = buttons.addButton("Copy", QDialogButtonBox.ButtonRole.ActionRole)
        copy.clicked.connect(self.copy)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.heading)
        layout.addWidget(self.text)
        layout.addWidget(buttons)
        self.resize(720, 260)

    def add(self, message: str) -> None:
        """Show ``message`` (made one line) below those already listed, without blocking."""
        if not self.isVisible():
            self.messages.clear()
            self.text.clear()
        line = " ".join(message.splitlines())
        self.messages.append(line)
        self.text.appendPlainText(line)
        n = len(self.messages)
        self.heading.setText(
            "This file could not be opened:" if n == 1 else f"{n} files could not be opened:"
        )
        if not self.isVisible():
            self.show()  # show(), not open() or exec(): the window stays usable
            self.raise_()
        self.show_start()
        # again once the text is laid out at the dialog's width (lines wrap differently)
        QTimer.singleShot(0, self.show_start)

    def show_start(self) -> None:
        """Scroll so that the newest message's first line, which names its file, is the top
        line: appending scrolls to the end, and a message longer than the box then showed
        only its middle ("xternal data ...", wrapped anywhere)."""
        block = self.text.document().lastBlock()
        while block.isValid() and not block.text() and block.previous().isValid():
            block = block.previous()
        self.text.verticalScrollBar().setValue(block.firstLineNumber())
        self.text.horizontalScrollBar().setValue(0)

    def copy(self) -> None:
        QGuiApplication.clipboard().setText("\n".join(self.messages))
