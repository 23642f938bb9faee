"""Loading and first layout off the GUI thread, so the window never stalls on a big file.

Each load runs in a daemon thread of its own rather than in Qt's global thread pool: Qt waits
for that pool's threads when the application ends, so one read that never returns (a file on a
hung network share) would keep xocview from quitting. A daemon thread is simply abandoned.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from xocview.errors import XocviewError, shorten_message
from xocview.formats.registry import load_source
from xocview.formats.source import Source
from xocview.model import Hierarchy
from xocview.ui.canvas.drawing import build_drawing
from xocview.ui.first_view import initial_expanded

__all__ = ["LoadJob", "LoadSignals", "internal_error"]

# At most this many files are read and laid out at once; the others wait for a turn.
_TURNS = threading.BoundedSemaphore(max(2, min(4, os.cpu_count() or 2)))


class LoadSignals(QObject):
    """``done(job, graph, drawing, expanded, fmt)`` or ``failed(job, message)``."""

    done = Signal(object, object, object, object, str)
    failed = Signal(object, str)


class LoadJob:
    """Reads a file once and lays it out; a cancelled job's result is dropped by the window."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cancelled = False
        self.signals = LoadSignals()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        """Run in a daemon thread: the application may end while it is still reading."""
        self.thread = threading.Thread(
            target=self.run, name=f"xocview-load-{self.path.name[:40]}", daemon=True
        )
        self.thread.start()

    def run(self) -> None:
        with _TURNS:
            if self.cancelled:
                return
            try:
                graph, fmt = load_source(Source(self.path))
                expanded = initial_expanded(graph, Hierarchy(graph))
                drawing = build_drawing(graph, expanded)
            except XocviewError as e:
                self._emit_failed(str(e))
                return
            except Exception as e:  # a bug of ours: report it, never kill the window
                self._emit_failed(internal_error(str(self.path), e))
                return
        if not self.cancelled:
            self.signals.done.emit(self, graph, drawing, expanded, fmt.NAME)

    def _emit_failed(self, message: str) -> None:
        if not self.cancelled:
            self.signals.failed.emit(self, message)


def internal_error(file: str, error: BaseException) -> str:
    """One line for an exception xocview did not expect: ``file: internal error: Type: text``."""
    text = " ".join(str(error).split())
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return shorten_message(f"{file}: internal error: {detail}", 300)
