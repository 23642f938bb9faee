"""How each side of a comparison is coloured, and the key that says so.

Two modes: ``differences`` (unchanged nodes neutral, added green, removed red, changed amber,
a group amber when something inside it differs) and ``ratio``, for two runs of one graph: each
node coloured by new time / old time on a diverging map centred on 1 (faster blue, slower red,
in log scale, symmetric about 1); nodes without a ratio neutral.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np
from PySide6.QtCore import QRect, QRectF, QSizeF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QLinearGradient, QPainter, QPen

from xocview.model.analyses.diff import ADDED, CHANGED, REMOVED, GraphDiff, shown_status
from xocview.model.analyses.diff import time_ratios as ratios_of
from xocview.model.analyses.profile import engine_label
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.style import Style
from xocview.ui.canvas.tint import DIVERGING_LEVELS, Tint, diverging, node_tint

__all__ = ["DIFFERENCES", "RATIO", "SideColours", "ratio_levels"]

DIFFERENCES, RATIO = "differences", "ratio"
_FILLS = ("no_value", "diff_added", "diff_removed", "diff_changed")  # by status code
_KEY = ((ADDED, "added"), (REMOVED, "removed"), (CHANGED, "changed"))
_MAX_SPAN = 4.0  # log2 of the largest ratio the scale reaches: 16x either way
_MIN_SPAN = math.log2(1.25)
_PAD, _BAR_W, _BAR_H, _SWATCH = 8.0, 180.0, 10.0, 12.0
Place = Callable[[QSizeF], QRectF]  # where an overlay of a size goes (Minimap.place_legend)


def ratio_levels(ratio: np.ndarray, span: float) -> np.ndarray:
    """Diverging level per value (middle level: 1), DIVERGING_LEVELS for NaN (no ratio)."""
    out = np.full(len(ratio), DIVERGING_LEVELS, dtype=np.int64)
    ok = np.isfinite(ratio) & (ratio > 0)
    frac = (np.clip(np.log2(ratio[ok]), -span, span) / span + 1.0) / 2.0
    out[ok] = np.rint(frac * (DIVERGING_LEVELS - 1)).astype(np.int64)
    return out


class SideColours:
    """The colours of one side: a tint per drawing (made once per drawing, mode and theme)."""

    def __init__(
        self, diff: GraphDiff, old_side: bool, names: tuple[str, str] = ("old", "new")
    ) -> None:
        self.status = shown_status(diff, old_side)
        self.names = names  # the files compared, left then right (for the ratio key)
        self.engine = next(iter(diff.times), "")  # the first engine both runs carry times of
        self.ratio = np.full(len(self.status), np.nan)
        self.span = _MIN_SPAN
        if self.engine:
            both = ratios_of(diff, self.engine)
            self.ratio = both[0] if old_side else both[1]
            finite = np.concatenate([r[np.isfinite(r) & (r > 0)] for r in both])
            if len(finite):
                self.span = float(np.clip(np.abs(np.log2(finite)).max(), _MIN_SPAN, _MAX_SPAN))
        self.mode = RATIO if self.engine else DIFFERENCES
        self._tint: tuple[tuple[int, str, str], Tint] | None = None

    def tint(self, d: Drawing, style: Style) -> Tint:
        key = (id(d), self.mode, style.name)
        if self._tint is None or self._tint[0] != key:
            if self.mode == RATIO:
                codes = ratio_levels(self.ratio, self.span)
                colours = [*diverging(), style.fill("no_value").color()]
            else:
                codes = self.status.astype(np.int64)
                colours = [style.fill(name).color() for name in _FILLS]
            self._tint = (key, node_tint(d, codes, colours))
        return self._tint[1]

    def paint_key(
        self, painter: QPainter, viewport: QRect, style: Style, place: Place | None = None
    ) -> None:
        """The key, bottom left of ``viewport`` (viewport pixels) or where ``place(size)``
        puts it (out of the way of the box under the cursor)."""
        panel = functools.partial(_panel, painter, viewport, style, place)
        if self.mode == RATIO:
            _ratio_key(painter, panel, style, self.span, engine_label(self.engine), self.names)
        else:
            _status_key(painter, panel, style)


def _panel(
    painter: QPainter,
    viewport: QRect,
    style: Style,
    place: Place | None,
    width: float,
    height: float,
) -> QRectF:
    if place is not None:
        box = place(QSizeF(width, height))
    else:
        box = QRectF(viewport.left() + 12, viewport.bottom() - 12 - height, width, height)
    back = QColor(style.background)
    back.setAlpha(225)
    painter.setPen(QPen(style.frame, 1))
    painter.setBrush(back)
    painter.drawRoundedRect(box, 4, 4)
    painter.setFont(style.detail_font)
    return box


def _status_key(painter: QPainter, panel: Callable[[float, float], QRectF], style: Style) -> None:
    metrics = QFontMetricsF(style.detail_font)
    line = metrics.height()
    widths = [_SWATCH + 4 + metrics.horizontalAdvance(label) for _, label in _KEY]
    box = panel(sum(widths) + 10 * len(widths) + 2 * _PAD, line + 2 * _PAD)
    x = box.left() + _PAD
    for (code, label), width in zip(_KEY, widths, strict=True):
        painter.setPen(QPen(style.border))
        painter.setBrush(style.fill(_FILLS[code]))
        top = box.top() + _PAD + (line - _SWATCH) / 2
        painter.drawRoundedRect(QRectF(x, top, _SWATCH, _SWATCH), 2, 2)
        painter.setPen(style.text)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(QRectF(x + _SWATCH + 4, box.top() + _PAD, width, line), flags, label)
        x += width + 10


def _ratio_key(
    painter: QPainter,
    panel: Callable[[float, float], QRectF],
    style: Style,
    span: float,
    source: str,
    names: tuple[str, str],
) -> None:
    metrics = QFontMetricsF(style.detail_font)
    line = metrics.height()
    title = f"time {names[1]} / {names[0]}{f' ({source})' if source else ''}, log scale"
    width = max(_BAR_W, metrics.horizontalAdvance(title) + 1) + 2 * _PAD
    box = panel(width, 2 * _PAD + 2 * line + _BAR_H + 4)
    painter.setPen(style.text)
    painter.drawText(QRectF(box.left() + _PAD, box.top() + _PAD, width, line), title)
    bar = QRectF(box.left() + _PAD, box.top() + _PAD + line + 2, _BAR_W, _BAR_H)
    gradient = QLinearGradient(bar.topLeft(), bar.topRight())
    colours = diverging()
    for k, colour in enumerate(colours):
        gradient.setColorAt(k / (len(colours) - 1), colour)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(gradient)
    painter.drawRect(bar)
    painter.setPen(style.text)
    labels = QRectF(bar.left(), bar.bottom() + 2, _BAR_W, line)
    end = f"{2.0**span:.2g}x"  # the scale is symmetric: as much faster at the left end
    painter.drawText(labels, Qt.AlignmentFlag.AlignLeft, f"{end} faster")
    painter.drawText(labels, Qt.AlignmentFlag.AlignHCenter, "1x")
    painter.drawText(labels, Qt.AlignmentFlag.AlignRight, f"{end} slower")
