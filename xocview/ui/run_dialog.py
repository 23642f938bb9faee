"""The Run dialog: where each input's values come from (or its shape), repeats, warm-up, symbol
sizes and, for an .onnx file when onnxruntime is installed, the engine that runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PySide6.QtWidgets import (
    QComboBox,
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
from xocview.executor.feeds import starts_empty
from xocview.executor.onnxruntime_engine import OPTIMIZATIONS, onnxruntime_available
from xocview.executor.threads import DEFAULT_THREADS
from xocview.model.analyses.summary import parse_shape, shape_text
from xocview.ui.document import Document

__all__ = ["RunDialog", "RunOptions", "ask_run_options", "onnxruntime_fits", "token_input"]


@dataclass
class RunOptions:
    """What a run needs beyond the graph; ``feeds`` maps input ids to ``.npy`` paths (or, for a
    language model's token input, the typed prompt's ids as an array) and ``shapes`` input ids
    to the shape of their random data (for inputs a file leaves without)."""

    feeds: dict[str, Any] = field(default_factory=dict)
    shapes: dict[str, list[int]] = field(default_factory=dict)
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    symbol_default: int = 1
    threads: int = DEFAULT_THREADS  # BLAS/OpenMP threads (0: every core)
    engine: str = "xocview"  # or "onnxruntime": the document's .onnx file on onnxruntime
    optimization: str = "all"  # onnxruntime's graph optimization level


_IDS = re.compile(r"\s*\d+(\s*,\s*\d+)*\s*,?\s*")


def token_input(tensor: Any) -> bool:
    """A language model's token ids: ``input_ids``, or an integer input of rank 2."""
    return tensor.id == "input_ids" or (
        tensor.dtype in ("int64", "int32") and len(tensor.shape) == 2
    )


def onnxruntime_fits(doc: Document) -> bool:
    """Whether onnxruntime can run the document: it is installed and the document is an .onnx
    file (onnxruntime runs the file, named by the graph's node ids)."""
    path = doc.path
    return (
        doc.format == "ONNX"
        and path is not None
        and path.suffix.lower() == ".onnx"
        and onnxruntime_available()
    )


class RunDialog(QDialog):
    """One row per graph input: a ``.npy`` file, else seeded random data of the declared shape
    or of the shape typed beside it (what MXNet and LightNet files leave out); then the run's
    settings."""

    def __init__(self, doc: Document, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Run {doc.title}")
        graph = doc.graph
        self.paths: dict[str, QLineEdit] = {}
        self.shape_edits: dict[str, QLineEdit] = {}
        self.tokens: set[str] = set()  # inputs that take a typed prompt of token ids
        self.dtypes = {graph.tensors[t].id: graph.tensors[t].dtype for t in graph.inputs}
        form = QFormLayout()
        for t in graph.inputs:
            tensor = graph.tensors[t]
            edit = QLineEdit(self)
            dtype = "float32" if tensor.dtype == "undefined" else tensor.dtype  # as it runs
            if token_input(tensor):
                edit.setPlaceholderText("token ids, e.g. 1,2,3 (or a .npy file)")
                self.tokens.add(tensor.id)
            elif any(map(starts_empty, tensor.metadata.get("shape_symbols") or ())):
                edit.setPlaceholderText(f"empty cache (past 0), {dtype} {shape_text(tensor)}")
            elif tensor.metadata.get("rank_unknown"):
                edit.setPlaceholderText(f"random {dtype}, shape at right")
            else:
                edit.setPlaceholderText(f"random {dtype} {shape_text(tensor)}")
            browse = QPushButton("Browse...", self)
            browse.clicked.connect(lambda _=False, e=edit: self._browse(e))
            shape = QLineEdit(self)
            shape.setPlaceholderText("shape, e.g. 1,3,224,224")
            shape.setToolTip("The shape of the random data; needed where the file gives none")
            row = QHBoxLayout()
            row.addWidget(edit, 2)
            row.addWidget(browse)
            row.addWidget(shape, 1)
            form.addRow(tensor.id, row)
            self.paths[tensor.id] = edit
            self.shape_edits[tensor.id] = shape
        if not graph.inputs:
            form.addRow(QLabel("The graph has no inputs."))
        self.repeat = _spin(1, 1000, 3)
        self.warmup = _spin(0, 100, 1)
        self.symbols = _spin(1, 1 << 16, 1)
        self.seed = _spin(0, 2**31 - 1, 0)
        self.threads = _spin(0, 1024, DEFAULT_THREADS)
        self.threads.setToolTip(
            "BLAS/OpenMP threads the kernels use while timed; one keeps times steady on a busy "
            "machine; 0: every core"
        )
        form.addRow("Timed passes (median)", self.repeat)
        form.addRow("Warm-up passes", self.warmup)
        form.addRow("Threads", self.threads)
        form.addRow("Size of symbolic dimensions", self.symbols)
        form.addRow("Random seed", self.seed)
        self.engine = QComboBox()  # in the form only when onnxruntime fits
        self.engine.addItem("xocview (bundled executor)", "xocview")
        self.optimization = QComboBox()
        for level in OPTIMIZATIONS:
            self.optimization.addItem(level, level)
        if onnxruntime_fits(doc):
            self._add_engine_rows(form, doc)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        self.problem = QLabel(self)
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #b3261e")  # as the inspector's messages
        self.problem.hide()
        layout.addWidget(self.problem)
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

    def _add_engine_rows(self, form: QFormLayout, doc: Document) -> None:
        """The Engine choice and onnxruntime's optimization level (enabled with it)."""
        self.engine.addItem("onnxruntime (its own profile of the .onnx file)", "onnxruntime")
        self.engine.setToolTip(
            "onnxruntime's times are kept apart from the bundled executor's "
            "(performance.time.onnxruntime), so both can be compared on one graph"
        )
        self.optimization.setToolTip(
            "onnxruntime's graph optimizations: all (as deployed) fuses nodes; basic and none "
            "keep more of them apart"
        )
        self.optimization.setEnabled(False)
        self.engine.currentIndexChanged.connect(
            lambda _=0: self.optimization.setEnabled(self.engine.currentData() == "onnxruntime")
        )
        form.addRow("Engine", self.engine)
        form.addRow("Optimization (onnxruntime)", self.optimization)
        if doc.dirty:
            note = QLabel("onnxruntime runs the file as saved on disk, not the edits.", self)
            note.setWordWrap(True)
            form.addRow(note)

    def _browse(self, edit: QLineEdit) -> None:
        name, _ = QFileDialog.getOpenFileName(self, "Input values", "", "NumPy array (*.npy)")
        if name:
            edit.setText(name)

    def accept(self) -> None:
        """Close only with shapes that a run can use; else say which is wrong."""
        try:
            self.shapes()
        except ValueError as e:
            self.problem.setText(str(e))
            self.problem.show()
            return
        super().accept()

    def shapes(self) -> dict[str, list[int]]:
        """The typed shapes by input id; ValueError naming the input for a bad one."""
        out: dict[str, list[int]] = {}
        for name, edit in self.shape_edits.items():
            text = edit.text().strip()
            if not text:
                continue
            try:
                shape = parse_shape(text)
            except ValueError as e:
                raise ValueError(f"input '{name}': {e}") from None
            if any(d < 0 for d in shape):
                raise ValueError(f"input '{name}': a run needs every size of {text!r}")
            out[name] = shape
        return out

    def options(self) -> RunOptions:
        feeds: dict[str, Any] = {}
        for name, edit in self.paths.items():
            text = edit.text().strip()
            if name in self.tokens and _IDS.fullmatch(text):
                ids = [int(p) for p in text.split(",") if p.strip()]
                dtype = np.int32 if self.dtypes[name] == "int32" else np.int64
                feeds[name] = np.asarray([ids], dtype=dtype)
            elif text:
                feeds[name] = text
        return RunOptions(
            feeds=feeds,
            shapes=self.shapes(),
            repeat=self.repeat.value(),
            threads=self.threads.value(),
            warmup=self.warmup.value(),
            seed=self.seed.value(),
            symbol_default=self.symbols.value(),
            engine=str(self.engine.currentData()),
            optimization=str(self.optimization.currentData()),
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
