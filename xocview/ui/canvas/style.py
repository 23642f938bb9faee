"""Colours, pens, brushes and fonts of the canvas, made once per theme."""

from __future__ import annotations

from dataclasses import dataclass, field

from PySide6.QtGui import QBrush, QColor, QFont, QPen

__all__ = ["THEMES", "Style"]

# Fill colours by operator category (and by tensor kind, and for groups).
_LIGHT = {
    "convolution": "#8ab4f8",
    "matmul": "#7fb3d5",
    "activation": "#f6b26b",
    "pooling": "#93c47d",
    "normalization": "#b4a7d6",
    "elementwise": "#ffd966",
    "shape": "#d9d9d9",
    "reduction": "#a2c4c9",
    "recurrent": "#ea9999",
    "control": "#c27ba0",
    "quantization": "#e6b8af",
    "io": "#eeeeee",
    "custom": "#cccccc",
    "group": "#f3f6fa",
    "input": "#d9ead3",
    "output": "#f4cccc",
    "weight": "#fff2cc",
    "activation_tensor": "#ffffff",
    "no_value": "#e3e3e3",  # heat colouring: a node without a measured value
    # a comparison's two sides: nodes only one side has, and nodes that changed
    "diff_added": "#57bb6a",
    "diff_removed": "#e8625c",
    "diff_changed": "#f2b33d",
}
_DARK = {k: QColor(v).darker(175).name() for k, v in _LIGHT.items()}
_DARK.update(
    {
        "group": "#2b2f36",
        "io": "#3a3a3a",
        "shape": "#4a4a4a",
        "custom": "#505050",
        "no_value": "#3c3c3c",
    }
)


@dataclass
class Style:
    """Everything the painter needs, built once: ``paint()`` never creates a pen."""

    name: str
    background: QColor
    text: QColor
    edge: QColor
    edge_highlight: QColor
    selection: QColor
    frame: QColor
    fills: dict[str, QBrush] = field(default_factory=dict)
    border: QPen = field(default_factory=QPen)
    edge_pen: QPen = field(default_factory=QPen)
    edge_pen_far: QPen = field(default_factory=QPen)
    edge_pen_highlight: QPen = field(default_factory=QPen)
    selection_pen: QPen = field(default_factory=QPen)
    frame_pen: QPen = field(default_factory=QPen)
    frame_pen_far: QPen = field(default_factory=QPen)
    frame_brush: QBrush = field(default_factory=QBrush)
    # a frame's title by depth (outermost first, the last for every deeper frame)
    frame_titles: tuple[tuple[QFont, QColor], ...] = ()
    title_font: QFont = field(default_factory=QFont)
    detail_font: QFont = field(default_factory=QFont)
    label_font: QFont = field(default_factory=QFont)
    label_halo: QBrush = field(default_factory=QBrush)  # under shape labels: edges fade there

    def fill(self, category: str) -> QBrush:
        return self.fills.get(category) or self.fills["custom"]


def _make(name: str, colours: dict[str, str], dark: bool) -> Style:
    bg = QColor("#1e1f22" if dark else "#ffffff")
    text = QColor("#e8e8e8" if dark else "#202124")
    edge = QColor("#8a8f98" if dark else "#6b7280")
    s = Style(
        name,
        bg,
        text,
        edge,
        QColor("#ff9f1c"),
        QColor("#1a73e8"),
        QColor("#5f6b7a" if dark else "#9aa5b1"),
    )
    s.fills = {k: QBrush(QColor(v)) for k, v in colours.items()}
    s.border = QPen(QColor("#9aa0a6" if dark else "#5f6368"), 1.0)
    s.border.setCosmetic(True)
    s.edge_pen = QPen(edge, 1.2)
    s.edge_pen.setCosmetic(True)
    # Far out, edges are hairlines: Qt strokes a one-pixel cosmetic pen on its fast path, a
    # wider one through its general stroker (10x slower on 14k antialiased edges).
    s.edge_pen_far = QPen(edge, 1.0)
    s.edge_pen_far.setCosmetic(True)
    s.edge_pen_highlight = QPen(s.edge_highlight, 2.4)
    s.edge_pen_highlight.setCosmetic(True)
    s.selection_pen = QPen(s.selection, 2.5)
    s.selection_pen.setCosmetic(True)
    # Frames are hairlines on one faint opaque fill: nested frames do not stack greys (the
    # depth shows in the title and the indent), and a solid one-pixel cosmetic pen is also
    # the fast path far out (dashing 30k outlines took a second a picture).
    line = QColor("#3b4048" if dark else "#d3d9e0")
    s.frame_pen = QPen(line, 1.0)
    s.frame_pen.setCosmetic(True)
    s.frame_pen_far = s.frame_pen
    s.frame_brush = QBrush(QColor("#232529" if dark else "#f8f9fb"))
    s.title_font = QFont("DejaVu Sans", 10)
    s.title_font.setBold(True)
    s.detail_font = QFont("DejaVu Sans", 8)
    s.label_font = QFont("DejaVu Sans", 7)
    outer = QFont("DejaVu Sans", 8)
    outer.setBold(True)
    inner = QFont("DejaVu Sans", 8)
    s.frame_titles = (
        (outer, QColor("#c4cad3" if dark else "#3c4450")),
        (inner, QColor("#a3abb6" if dark else "#5a6472")),
        (inner, QColor("#848d99" if dark else "#7d8794")),
    )
    halo = QColor(bg)
    halo.setAlpha(215)
    s.label_halo = QBrush(halo)
    return s


THEMES: dict[str, Style] = {}


def theme(name: str) -> Style:
    """The style of a theme ("light" or "dark"), made on first use (needs a QGuiApplication)."""
    if name not in THEMES:
        THEMES[name] = _make(name, _DARK if name == "dark" else _LIGHT, name == "dark")
    return THEMES[name]
