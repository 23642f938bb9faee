"""Fills that replace some boxes' usual ones: how a comparison colours its two sides.

A ``Tint`` gives each drawing item a code, an index into its brushes, or -1 for the item's
usual fill (its category's, or its heat colour). The painter takes it beside the heat levels,
so that any view can colour boxes by a per-node value of its own without a colouring mode of
the document. ``diverging`` is the map for ratios centred on 1 (faster: blue, slower: red).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PySide6.QtGui import QBrush, QColor

from xocview.ui.canvas.drawing import KIND_TENSOR, Drawing

__all__ = ["DIVERGING_LEVELS", "Tint", "diverging", "node_tint", "white_reads_better"]

DIVERGING_LEVELS = 33  # odd: the middle level is "no change"
# ColorBrewer's RdBu, reversed: blue (new/old < 1, a speed-up) -> light -> red (a slow-down)
_DIVERGING_STOPS = np.array(
    [
        [0x21, 0x66, 0xAC],
        [0x67, 0xA9, 0xCF],
        [0xD1, 0xE5, 0xF0],
        [0xF7, 0xF7, 0xF7],
        [0xFD, 0xDB, 0xC7],
        [0xEF, 0x8A, 0x62],
        [0xB2, 0x18, 0x2B],
    ],
    dtype=np.float64,
)
_INK = QColor(20, 20, 20)


@dataclass(frozen=True)
class Tint:
    """Per drawing item an index into ``brushes`` (-1: the usual fill); ``white_text[c]`` says
    whether titles on brush c read better in white than in ink."""

    codes: np.ndarray
    brushes: tuple[QBrush, ...]
    white_text: tuple[bool, ...]

    def text_colour(self, code: int) -> QColor:
        return QColor(255, 255, 255) if self.white_text[code] else _INK


def node_tint(d: Drawing, node_codes: np.ndarray, colours: Sequence[QColor]) -> Tint:
    """The tint of ``d``'s node boxes from a code per node position (-1: the usual fill);
    tensor boxes keep theirs."""
    codes = np.full(d.count, -1, dtype=np.int64)
    nodes = d.item_node
    boxed = (nodes >= 0) & (d.kind != KIND_TENSOR)
    codes[boxed] = node_codes[nodes[boxed]]
    brushes = tuple(QBrush(c) for c in colours)
    return Tint(codes, brushes, tuple(white_reads_better(c) for c in colours))


def white_reads_better(colour: QColor) -> bool:
    """Whether white text on ``colour`` has more contrast than dark ink (WCAG ratios)."""
    fill = _luminance(colour)
    ink = _luminance(_INK)
    return 1.05 / (fill + 0.05) > (fill + 0.05) / (ink + 0.05)


def _luminance(colour: QColor) -> float:
    c = np.array([colour.red(), colour.green(), colour.blue()], dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(linear @ np.array([0.2126, 0.7152, 0.0722]))


@lru_cache(maxsize=1)
def diverging() -> tuple[QColor, ...]:
    """DIVERGING_LEVELS colours from blue through a light middle to red."""
    t = np.linspace(0.0, 1.0, DIVERGING_LEVELS) * (len(_DIVERGING_STOPS) - 1)
    k = np.minimum(t.astype(int), len(_DIVERGING_STOPS) - 2)
    f = (t - k)[:, None]
    rgb = np.rint(_DIVERGING_STOPS[k] * (1 - f) + _DIVERGING_STOPS[k + 1] * f).astype(int)
    return tuple(QColor(int(r), int(g), int(b)) for r, g, b in rgb.tolist())
