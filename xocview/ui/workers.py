"""Loading and first layout off the GUI thread, so the window never stalls on a big file."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Signal

from xocview.errors import XocviewError
from xocview.formats import load
from xocview.formats.registry import detect
from xocview.formats.source import Source
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import build_drawing
from xocview.ui.document import initial_expanded

__all__ = ["LoadJob", "LoadSignals"]


class LoadSignals(QObject):
    """``done(job, graph, drawing, expanded, fmt)`` or ``failed(job, message)``."""

    done = Signal(object, object, object, object, str)
    failed = Signal(object, str)


class LoadJob(QRunnable):
    """Reads a file and lays it out; a cancelled job's result is dropped by the window."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.cancelled = False
        self.signals = LoadSignals()

    def run(self) -> None:
        try:
            fmt = detect(Source(self.path)).NAME
            graph = load(self.path)
            expanded = initial_expanded(graph, Hierarchy(graph))
            drawing = build_drawing(graph, expanded)
        except XocviewError as e:
            self.signals.failed.emit(self, str(e))
            return
        except Exception as e:  # a bug of ours: report it, never kill the window
            self.signals.failed.emit(self, f"{self.path}: internal error: {type(e).__name__}: {e}")
            return
        self.signals.done.emit(self, graph, drawing, expanded, fmt)
