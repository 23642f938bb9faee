"""A small bar chart of a tensor's value histogram, shown under the inspector's rows."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QRectF, QSize, Qt
from PySide6.QtGui import QHelpEvent, QPainter, QPaintEvent, QPalette, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

__all__ = ["HistogramWidget"]

_HEIGHT = 60
_MARGIN = 2.0


class HistogramWidget(QWidget):
    """Bars of ``counts`` between ``edges``; hovering a bar tells its range and count.

    Heights are linear in the count; an empty histogram (no finite values) paints a note.
    Colours come from the palette so that light and dark themes both read well.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.counts = np.zeros(0, dtype=np.int64)
        self.edges = np.zeros(0, dtype=np.float64)
        self.setFixedHeight(_HEIGHT)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)

    def set_histogram(self, counts: np.ndarray, edges: np.ndarray) -> None:
        self.counts = np.asarray(counts, dtype=np.int64)
        self.edges = np.asarray(edges, dtype=np.float64)
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(200, _HEIGHT)

    def bar_at(self, x: float) -> int:
        """The bar under widget coordinate ``x``, or -1 outside the bars."""
        n = len(self.counts)
        width = self.width() - 2 * _MARGIN
        if not n or width <= 0 or not _MARGIN <= x < _MARGIN + width:
            return -1
        return min(n - 1, int((x - _MARGIN) / width * n))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        palette = self.palette()
        painter.fillRect(self.rect(), palette.color(QPalette.ColorRole.Base))
        area = QRectF(self.rect()).adjusted(_MARGIN, _MARGIN, -_MARGIN, -_MARGIN)
        n = len(self.counts)
        top = int(self.counts.max()) if n else 0
        if top == 0:
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(area, Qt.AlignmentFlag.AlignCenter, "no finite values")
            painter.end()
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(palette.color(QPalette.ColorRole.Highlight))
        step = area.width() / n
        gap = 1.0 if step > 3 else 0.0
        for k, count in enumerate(self.counts.tolist()):
            if count:
                h = max(1.0, area.height() * count / top)  # a non-empty bar never vanishes
                painter.drawRect(QRectF(area.left() + k * step, area.bottom() - h, step - gap, h))
        painter.setPen(QPen(palette.color(QPalette.ColorRole.Mid), 1))
        painter.drawLine(area.bottomLeft(), area.bottomRight())
        painter.end()

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            k = self.bar_at(event.pos().x())
            if k >= 0 and len(self.edges) == len(self.counts) + 1:
                lo, hi = self.edges[k], self.edges[k + 1]
                text = f"[{lo:.6g}, {hi:.6g}{']' if k == len(self.counts) - 1 else ')'}: "
                QToolTip.showText(event.globalPos(), text + f"{int(self.counts[k]):,}", self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)
