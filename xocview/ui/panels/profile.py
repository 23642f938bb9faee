"""The Profile pane: where the time goes, from the last run or the times a file stores.

Slowest nodes (click one to select it), time per op type as bars, the total, peak memory of
live tensors, and the run's outputs with their shapes and statistics. It shows the times of
the engine the canvas colours by (``Document.shown_time_engine``): the bundled executor's
(``performance.time.cpu``), onnxruntime's (``performance.time.onnxruntime``), ...; when the
graph stores more than the bundled executor's, the summary starts with the engine's name.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSizePolicy,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from xocview.errors import shorten
from xocview.executor import RunResult
from xocview.executor.result import UNSTEADY
from xocview.model.analyses.profile import RUN_TIMES, format_ms, own_times_ms, subgraph_holders
from xocview.ui.document import Document
from xocview.ui.panels import follow

__all__ = ["OpBars", "ProfilePanel", "format_ms"]

TOP_NODES = 50
TOP_OPS = 12


class OpBars(QWidget):
    """Horizontal bars: milliseconds per op type, longest first."""

    ROW = 16

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: list[tuple[str, float]] = []
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def set_rows(self, rows: list[tuple[str, float]]) -> None:
        self.rows = rows
        self.setFixedHeight(max(1, len(rows)) * self.ROW + 4)
        self.update()

    def value_texts(self) -> list[str]:
        """The time printed at the end of each bar."""
        return [format_ms(ms) for _, ms in self.rows]

    def value_width(self) -> float:
        """Room for the widest time, so that none is clipped."""
        metrics = self.fontMetrics()
        return float(max((metrics.horizontalAdvance(t) for t in self.value_texts()), default=0)) + 6

    def sizeHint(self) -> QSize:
        return QSize(240, max(1, len(self.rows)) * self.ROW + 4)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        palette = self.palette()
        painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Base))
        if not self.rows:
            painter.end()
            return
        value_w = self.value_width()
        label_w = min(130.0, self.width() * 0.4, max(40.0, self.width() - value_w - 30))
        bar_w = max(10.0, self.width() - label_w - value_w - 12)
        top = max(ms for _, ms in self.rows) or 1.0
        for k, ((op, ms), text) in enumerate(zip(self.rows, self.value_texts(), strict=True)):
            y = 2 + k * self.ROW
            painter.setPen(palette.color(QPalette.ColorRole.Text))
            painter.drawText(
                QRectF(4, y, label_w - 6, self.ROW),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                op,
            )
            painter.fillRect(
                QRectF(label_w, y + 3, max(1.0, bar_w * ms / top), self.ROW - 6),
                palette.color(QPalette.ColorRole.Highlight),
            )
            painter.drawText(
                QRectF(label_w + bar_w + 4, y, value_w, self.ROW),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                text,
            )
        painter.end()


def _table(columns: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(columns)
    table.verticalHeader().setVisible(False)
    table.verticalHeader().setDefaultSectionSize(20)
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    header = table.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return table


class ProfilePanel(QWidget):
    """Follows one document; refreshes after a run and after edits."""

    jumped = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc: Document | None = None
        # the engine of the document's last run and its optimization level (None: no run yet)
        self.engine: tuple[str, str] | None = None
        self.shown = ""  # the engine whose times the pane shows (performance.time.<shown>)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.nodes = _table(["node", "op", "time", "share"])
        self.nodes.cellClicked.connect(self._select)
        self.bars = OpBars(self)
        self.outputs = _table(["output", "shape", "dtype", "min", "max", "mean"])
        # three columns side by side: the pane lives in the wide bottom dock area
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.summary)
        columns = QHBoxLayout()
        layout.addLayout(columns, 1)
        for title, widget, stretch in (
            ("Slowest nodes", self.nodes, 3),
            ("Time per op type", self.bars, 2),
            ("Outputs of the last run", self.outputs, 3),
        ):
            column = QVBoxLayout()
            column.addWidget(QLabel(title))
            column.addWidget(widget, 0 if widget is self.bars else 1)
            if widget is self.bars:
                column.addStretch(1)
            columns.addLayout(column, stretch)

    def set_document(self, doc: Document | None) -> None:
        follow(self.doc, doc, "heat_changed", self._engine_changed)
        self.doc = follow(self.doc, doc, "model_changed", self.refresh)
        self.refresh()

    def set_engine(self, engine: str | None, optimization: str = "") -> None:
        """The document's last run: its engine ("xocview" or "onnxruntime") and onnxruntime's
        optimization level, told with that engine's times (None: no run yet)."""
        self.engine = None if engine is None else (engine, optimization)

    def _engine_changed(self) -> None:
        """Heat changes come a few times a second during a run; the pane follows the engine."""
        if self.doc is not None and self.doc.shown_time_engine() != self.shown:
            self.refresh()

    def _times(self, doc: Document) -> tuple[np.ndarray, str]:
        """Each node's own stored ms for the engine the document shows, and the words that
        name it ("" when the graph has no times but the bundled executor's)."""
        self.shown = doc.shown_time_engine()
        times = own_times_ms(doc.graph, self.shown)
        label = doc.time_label(self.shown)
        if label and self._last_run_shown():
            level = self.engine[1] if self.engine is not None else ""
            label += f" (optimization {level})" if level else ""
        return times, f"{label}: " if label else ""

    def _last_run_shown(self) -> bool:
        """Whether the times shown are the last run's (its engine's)."""
        engine = self.engine[0] if self.engine is not None else "xocview"
        return RUN_TIMES.get(engine) == self.shown

    def refresh(self) -> None:
        doc = self.doc
        self.nodes.setRowCount(0)
        self.outputs.setRowCount(0)
        self.bars.set_rows([])
        if doc is None:
            self.summary.setText("")
            return
        if not doc.time_sources():  # no node stores a time: nothing to add up (130k nodes)
            self.shown = doc.shown_time_engine()
            self.summary.setText("No times yet: Run > Run Graph (F5) measures every node.")
            return
        graph, h = doc.graph, doc.hierarchy
        # what each node that runs took itself: leaves, and an If's or Loop's own share
        times, engine = self._times(doc)
        runs = ~h.is_group | subgraph_holders(graph, h)
        leaves = np.flatnonzero(runs & np.isfinite(times))
        run: RunResult | None = getattr(doc, "last_run", None)
        if not len(leaves):
            self.summary.setText("No times yet: Run > Run Graph (F5) measures every node.")
            return
        total = float(times[leaves].sum())
        text = f"{engine}Total {format_ms(total)} over {len(leaves):,} timed nodes"
        if run is not None and self._last_run_shown():  # the run whose times are shown
            onnxruntime = self.engine is not None and self.engine[0] == "onnxruntime"
            text += _run_text(run, onnxruntime)
        self.summary.setText(text + ".")
        self._fill_nodes(leaves, times, total)
        by_op: dict[str, float] = defaultdict(float)
        for i in leaves.tolist():
            by_op[graph.nodes[i].op_type] += float(times[i])
        top_ops = sorted(by_op.items(), key=lambda kv: -kv[1])[:TOP_OPS]
        self.bars.set_rows([(shorten(op), ms) for op, ms in top_ops])
        if run is not None:
            self._fill_outputs(run)

    def _fill_nodes(self, leaves: np.ndarray, times: np.ndarray, total: float) -> None:
        assert self.doc is not None
        order = leaves[np.argsort(-times[leaves], kind="stable")][:TOP_NODES]
        self.nodes.setRowCount(len(order))
        for row, i in enumerate(order.tolist()):
            node = self.doc.graph.nodes[i]
            ms = float(times[i])
            cells = [
                shorten(node.id),
                shorten(node.op_type),
                format_ms(ms),
                f"{100 * ms / total:.1f}%",
            ]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setData(Qt.ItemDataRole.UserRole, i)
                if col >= 2:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.nodes.setItem(row, col, item)

    def _fill_outputs(self, run: RunResult) -> None:
        self.outputs.setRowCount(len(run.outputs))
        for row, (name, value) in enumerate(run.outputs.items()):
            arr = np.asarray(value)
            stats = ["-", "-", "-"]
            if arr.size and arr.dtype.kind in "fiub":
                a = arr.astype(np.float64)
                stats = [f"{a.min():.6g}", f"{a.max():.6g}", f"{a.mean():.6g}"]
            shape = "x".join(map(str, arr.shape)) or "scalar"
            for col, text in enumerate([shorten(name), shorten(shape), str(arr.dtype), *stats]):
                self.outputs.setItem(row, col, QTableWidgetItem(text))

    def _select(self, row: int, _col: int) -> None:
        item = self.nodes.item(row, 0)
        if item is None or self.doc is None:
            return
        node = int(item.data(Qt.ItemDataRole.UserRole))
        self.doc.reveal(node)
        self.doc.select_node(node)
        self.jumped.emit()


def _run_text(run: RunResult, onnxruntime: bool) -> str:
    """What the summary says of the run whose times it shows: a pass, its threads, the peak
    memory (the bundled executor's only) and how steady the passes were."""
    threads = f"{run.threads} thread" + ("s" if run.threads != 1 else "")
    passes = f"median of {run.passes}, " if run.passes > 1 else ""
    text = f"; one pass {format_ms(run.total_time * 1e3)} ({passes}{threads})"
    if not onnxruntime:
        mb = 2**20
        text += (
            f"; peak memory {run.peak_bytes / mb:.1f} MB (weights {run.weight_bytes / mb:.1f} MB)"
        )
    typical = run.typical_spread()
    if typical is not None:
        unsteady = len(run.unsteady(UNSTEADY))
        text += f"; passes differ x{typical:.2f} typically"
        if unsteady:
            text += f", {unsteady} nodes more than x{UNSTEADY}: times not steady"
    return text
