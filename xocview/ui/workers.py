"""Loading and layout off the GUI thread, so the window never stalls on a big file.

Each load runs in a daemon thread of its own rather than in Qt's global thread pool: Qt waits
for that pool's threads when the application ends, so one read that never returns (a file on a
hung network share) would keep xocview from quitting. A daemon thread is simply abandoned.
Both jobs report progress and stop when cancelled (``progress.WorkProgress``): a load between
reading and laying out and then group by group, a relayout group by group.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Signal

from xocview.errors import XocviewError, shorten_message
from xocview.formats.gc_pause import gc_paused
from xocview.formats.registry import load_source
from xocview.formats.source import Source
from xocview.model import Graph, Hierarchy
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.first_view import initial_expanded
from xocview.ui.progress import Cancelled, WorkProgress

__all__ = ["LoadJob", "LoadSignals", "RelayoutJob", "internal_error"]

# At most this many files are read and laid out at once; the others wait for a turn.
_TURNS = threading.BoundedSemaphore(max(2, min(4, os.cpu_count() or 2)))


class LoadSignals(QObject):
    """``done(job, graph, drawing, expanded, fmt, facts)`` or ``failed(job, message)``; meanwhile
    ``progress(job, done, total)`` while the first view is laid out."""

    done = Signal(object, object, object, object, str, object)  # ..., facts
    failed = Signal(object, str)
    progress = Signal(object, int, int)


class LoadJob:
    """Reads a file once and lays it out; a cancelled job stops at its next step."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.signals = LoadSignals()
        self.progress = WorkProgress(
            lambda done, total: self.signals.progress.emit(self, done, total)
        )
        self.thread: threading.Thread | None = None

    @property
    def cancelled(self) -> bool:
        return self.progress.cancelled

    def cancel(self) -> None:
        self.progress.cancel()

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
                self.progress.check()
                hierarchy = Hierarchy.of(graph)
                expanded = initial_expanded(graph, hierarchy)
                with gc_paused():
                    drawing = build_drawing(graph, expanded, progress=self.progress)
                self.progress.check()
                # the panels' whole-graph facts come after the first paint (Document)
                facts: dict[str, object] = {}
            except Cancelled:
                return
            except XocviewError as e:
                self._emit_failed(str(e))
                return
            except Exception as e:  # a bug of ours: report it, never kill the window
                self._emit_failed(internal_error(str(self.path), e))
                return
        if not self.cancelled:
            self.signals.done.emit(self, graph, drawing, expanded, fmt.NAME, facts)

    def _emit_failed(self, message: str) -> None:
        if not self.cancelled:
            self.signals.failed.emit(self, message)


class _RelayoutSignals(QObject):
    done = Signal(int, object, object)  # generation, drawing, (expanded, direction, weights)
    failed = Signal(int, str)
    progress = Signal(int, int, int)  # generation, done, total


class RelayoutJob(QRunnable):
    """A layout of the visible graph in a worker thread (the model is only read)."""

    def __init__(
        self,
        generation: int,
        graph: Graph,
        expanded: set[str],
        direction: str,
        show_weights: bool,
        hint: dict[str, float] | None,
        previous: Drawing | None = None,
    ) -> None:
        super().__init__()
        self.args = (generation, graph, expanded, direction, show_weights, hint)
        self.previous = previous
        self.signals = _RelayoutSignals()
        self.progress = WorkProgress(
            lambda done, total: self.signals.progress.emit(generation, done, total)
        )

    def run(self) -> None:
        generation, graph, expanded, direction, show_weights, hint = self.args
        try:
            # a layout makes millions of small containers that live on with the drawing: full
            # collections over them, in the middle of it, held every thread for up to a second
            with gc_paused():
                drawing = build_drawing(
                    graph,
                    expanded,
                    direction=direction,
                    show_weights=show_weights,
                    order_hint=hint,
                    progress=self.progress,
                    previous=self.previous,
                )
        except Cancelled:
            return
        except Exception as e:  # a bug of ours: the old picture stays, the window lives on
            name = type(e).__name__
            text = " ".join(str(e).split())
            self.signals.failed.emit(generation, shorten_message(f"internal error: {name}: {text}"))
            return
        if not self.progress.cancelled:
            self.signals.done.emit(generation, drawing, (expanded, direction, show_weights))


def internal_error(file: str, error: BaseException) -> str:
    """One line for an exception xocview did not expect: ``file: internal error: Type: text``."""
    text = " ".join(str(error).split())
    detail = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return shorten_message(f"{file}: internal error: {detail}", 300)
