"""The Run dialog: where each input's values come from, repeats, warm-up and symbol sizes."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from xocview.executor import unsupported_ops
from xocview.model.summary import shape_text
from xocview.ui.document import Document

__all__ = ["RunDialog", "RunOptions", "ask_run_options"]


@dataclass
class RunOptions:
    """What a run needs beyond the graph; ``feeds`` maps input ids to ``.npy`` paths."""

    feeds: dict[str, str] = field(default_factory=dict)
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    symbol_default: int = 1


class RunDialog(QDialog):
    """One row per graph input (empty: seeded random data), then the run's settings."""

    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Run {doc.title}")
        graph = doc.graph
        self.paths: dict[str, QLineEdit] = {}
        form = QFormLayout()
        for t in graph.inputs:
            tensor = graph.tensors[t]
            edit = QLineEdit(self)
            edit.setPlaceholderText(f"random {tensor.dtype} {shape_text(tensor)}")
            browse = QPushButton("Browse...", self)
            browse.clicked.connect(lambda _=False, e=edit: self._browse(e))
            row = QHBoxLayout()
            row.addWidget(edit, 1)
            row.addWidget(browse)
            form.addRow(tensor.id, row)
            self.paths[tensor.id] = edit
        if not graph.inputs:
            form.addRow(QLabel("The graph has no inputs."))
        self.repeat = _spin(1, 1000, 3)
        self.warmup = _spin(0, 100, 1)
        self.symbols = _spin(1, 1 << 16, 1)
        self.seed = _spin(0, 2**31 - 1, 0)
        form.addRow("Timed passes (median)", self.repeat)
        form.addRow("Warm-up passes", self.warmup)
        form.addRow("Size of symbolic dimensions", self.symbols)
        form.addRow("Random seed", self.seed)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        missing = unsupported_ops(graph)
        if missing:
            ops = ", ".join(f"{op} ({n})" for op, n in sorted(missing.items()))
            note = QLabel(f"No kernel for: {ops}. The run stops at the first of them.", self)
            note.setWordWrap(True)
            layout.addWidget(note)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _browse(self, edit: QLineEdit) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Input values", "", "NumPy array (*.npy)")
        if name:
            edit.setText(name)

    def options(self) -> RunOptions:
        feeds = {k: e.text().strip() for k, e in self.paths.items() if e.text().strip()}
        return RunOptions(
            feeds=feeds,
            repeat=self.repeat.value(),
            warmup=self.warmup.value(),
            seed=self.seed.value(),
            symbol_default=self.symbols.value(),
        )


def _spin(low: int, high: int, value: int) -> QSpinBox:
    box = QSpinBox()
    box.setRange(low, high)
    box.setValue(value)
    return box


def ask_run_options(parent: QWidget, doc: Document) -> RunOptions | None:
    """The dialog, modal; None when cancelled."""
    dialog = RunDialog(doc, parent)
    return dialog.options() if dialog.exec() == QDialog.DialogCode.Accepted else None
