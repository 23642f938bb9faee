"""`xocview render`: a graph drawn to PNG or SVG without a window."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtGui import QGuiApplication

from xocview.formats import load
from xocview.model import Graph, Hierarchy
from xocview.model.analyses.metrics import node_metric
from xocview.model.gc_pause import gc_paused
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.canvas.heat import HeatLevels, heat_levels
from xocview.ui.first_view import first_view_state, laid_out
from xocview.ui.render import render_to_file

__all__ = ["ensure_gui_application", "graph_drawing", "metric_heat", "render_file"]


def ensure_gui_application() -> QGuiApplication:
    """A QGuiApplication for fonts and painting; offscreen when there is no display."""
    existing = QGuiApplication.instance()
    if isinstance(existing, QGuiApplication):
        return existing
    if not (
        os.environ.get("DISPLAY")
        or os.environ.get("WAYLAND_DISPLAY")
        or sys.platform in ("darwin", "win32")
    ):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    return QGuiApplication(sys.argv[:1])


def render_file(
    source: Path,
    target: Path,
    *,
    level: int | None = None,
    expand_all: bool = False,
    theme: str = "light",
    direction: str = "TB",
    scale: float = 1.0,
) -> tuple[int, int]:
    """Load ``source``, lay it out and draw it into ``target``; returns the image size.

    The file is read before Qt starts, so that a file that cannot be read fails at once.
    """
    graph = load(source)
    ensure_gui_application()
    drawing = graph_drawing(graph, level=level, expand_all=expand_all, direction=direction)
    return render_to_file(drawing, target, theme, scale)


def graph_drawing(
    graph: Graph, *, level: int | None = None, expand_all: bool = False, direction: str = "TB"
) -> Drawing:
    """The drawing ``xocview render`` makes: every group open (``expand_all``), those above
    depth ``level``, or else the first view the window opens with."""
    h = Hierarchy.of(graph)
    if expand_all:
        expanded = {graph.nodes[i].id for i in range(len(graph.nodes)) if h.is_group[i]}
    elif level is not None:
        expanded = {
            graph.nodes[i].id
            for i in range(len(graph.nodes))
            if h.is_group[i] and h.depth[i] < level
        }
    else:
        expanded = None
    with gc_paused():  # see RelayoutJob.run: a full collection mid-layout costs half a second
        drawing = None
        if expanded is None:  # the first view the window opens with
            expanded, drawing = first_view_state(graph, h, laid_out(graph, direction=direction))
        if drawing is None:
            drawing = build_drawing(graph, expanded, direction=direction)
    return drawing


def metric_heat(graph: Graph, drawing: Drawing, name: str) -> HeatLevels:
    """The heat colours of ``drawing``'s nodes by the metric ``performance.<name>``, on the
    window's log scale, as the window colours by an imported metric."""
    return heat_levels(drawing, node_metric(graph, name, Hierarchy.of(graph)), True)
