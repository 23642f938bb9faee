"""Heat colouring: a perceptual colour map and the mapping of node values to its levels.

The map follows inferno's control colours (dark violet -> red -> yellow), which stay ordered in
lightness for every reader, colour-blind ones included; its darkest eighth is left out so that
a box's border and title stay visible. Values map to 256 levels, linearly or logarithmically
over the range of the values on screen (a collapsed group shows the sum of its leaves).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PySide6.QtGui import QBrush, QColor

from xocview.ui.canvas.drawing import Drawing

__all__ = [
    "INK",
    "LEVELS",
    "HeatLevels",
    "heat_brushes",
    "heat_colour",
    "heat_levels",
    "light_text",
    "text_contrast",
]

LEVELS = 256
# inferno at 0, 1/8, ..., 1 (sRGB)
_STOPS = np.array(
    [
        [0x00, 0x00, 0x04],
        [0x1B, 0x0C, 0x41],
        [0x4A, 0x0C, 0x6B],
        [0x78, 0x1C, 0x6D],
        [0xA5, 0x2C, 0x60],
        [0xCF, 0x44, 0x46],
        [0xED, 0x69, 0x25],
        [0xFB, 0x9B, 0x06],
        [0xFC, 0xFF, 0xA4],
    ],
    dtype=np.float64,
)
_START = 0.14  # the first level's place on the map


@lru_cache(maxsize=1)
def _table() -> np.ndarray:
    """LEVELS x 3 colours, interpolated between the stops."""
    t = np.linspace(_START, 1.0, LEVELS) * (len(_STOPS) - 1)
    k = np.minimum(t.astype(int), len(_STOPS) - 2)
    f = (t - k)[:, None]
    return np.rint(_STOPS[k] * (1 - f) + _STOPS[k + 1] * f).astype(int)


def heat_colour(level: int) -> QColor:
    r, g, b = _table()[level].tolist()
    return QColor(r, g, b)


@lru_cache(maxsize=1)
def heat_brushes() -> list[QBrush]:
    """One brush per level, made once."""
    return [QBrush(heat_colour(k)) for k in range(LEVELS)]


# Dark text on light heat colours: the painter's ink, whatever the theme's text colour is.
INK = (20, 20, 20)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG relative luminance of sRGB colours (0-255), one per row."""
    c = np.asarray(rgb, dtype=np.float64) / 255.0
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return linear @ np.array([0.2126, 0.7152, 0.0722])


@lru_cache(maxsize=1)
def light_text() -> np.ndarray:
    """Per level: whether a title reads better in white than in ink (WCAG contrast)."""
    fill = _luminance(_table())
    ink = float(_luminance(np.array([INK]))[0])
    return (1.05 / (fill + 0.05)) > ((fill + 0.05) / (ink + 0.05))


def text_contrast() -> np.ndarray:
    """Per level: the WCAG contrast ratio of the title colour ``light_text`` picks."""
    fill = _luminance(_table())
    ink = float(_luminance(np.array([INK]))[0])
    return np.where(light_text(), 1.05 / (fill + 0.05), (fill + 0.05) / (ink + 0.05))


@dataclass(frozen=True)
class HeatLevels:
    """Colour level per drawing item (-1: no value, or a tensor), the range they span, and
    whose values they are when the legend should say so (the engine of measured times)."""

    levels: np.ndarray
    low: float
    high: float
    log: bool
    source: str = ""


def heat_levels(d: Drawing, node_values: np.ndarray, log: bool, source: str = "") -> HeatLevels:
    """Levels for the node items of ``d`` from values per node position (NaN: none), from
    ``source`` (named in the legend; "": nothing to name).

    The range is that of the items on the drawing, so a collapsed group's sum and the leaves
    beside it share one scale. With ``log``, values <= 0 get no level.
    """
    levels = np.full(d.count, -1, dtype=np.int64)
    nodes = d.item_node
    is_node = nodes >= 0
    values = np.full(d.count, np.nan)
    values[is_node] = node_values[nodes[is_node]]
    ok = np.isfinite(values) & ((values > 0) if log else True)
    if not ok.any():
        return HeatLevels(levels, float("nan"), float("nan"), log, source)
    v = np.log10(values[ok]) if log else values[ok]
    lo, hi = float(v.min()), float(v.max())
    span = hi - lo
    frac = (v - lo) / span if span > 0 else np.ones_like(v)
    levels[ok] = np.clip(np.rint(frac * (LEVELS - 1)), 0, LEVELS - 1).astype(np.int64)
    low, high = (10**lo, 10**hi) if log else (lo, hi)
    return HeatLevels(levels, low, high, log, source)
