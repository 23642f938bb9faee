"""Loading and layout off the GUI thread, so the window never stalls on a big file.

Each load runs in a daemon thread of its own rather than in Qt's global thread pool: Qt waits
for that pool's threads when the application ends, so one read that never returns (a file on a
hung network share) would keep xocview from quitting. A daemon thread is simply abandoned.
An ONNX file is read in a child process (``load_process``): onnx's C++ code holds the
interpreter lock, which no thread can take back, and Cancel kills the child at once.
Both jobs report progress and stop when cancelled (``progress.WorkProgress``): a load between
reading and laying out and then group by group, a relayout group by group.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Signal

from xocview.errors import XocviewError
from xocview.formats.registry import load_source
from xocview.formats.source import Source
from xocview.model import Graph, Hierarchy
from xocview.model.gc_pause import gc_paused
from xocview.ui.canvas.drawing import Drawing, build_drawing
from xocview.ui.failure_text import failure_message, internal_error
from xocview.ui.first_view import first_view_state
from xocview.ui.load_process import ChildLoad, reads_apart
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
        self.child: ChildLoad | None = None  # the process reading the file, while it does
        self._lock = threading.Lock()

    @property
    def cancelled(self) -> bool:
        return self.progress.cancelled

    def cancel(self) -> None:
        """Stop: a child process reading the file is killed at once, a layout stops at its
        next step."""
        with self._lock:
            self.progress.cancel()
            if self.child is not None:
                self.child.kill()

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
                graph, fmt = self._read()
                self.progress.check()
                hierarchy = Hierarchy.of(graph)
                with gc_paused():
                    expanded, drawing = first_view_state(
                        graph,
                        hierarchy,
                        lambda e, wrap_height=None: build_drawing(
                            graph, e, progress=self.progress, wrap_height=wrap_height
                        ),
                    )
                    if drawing is None:
                        drawing = build_drawing(graph, expanded, progress=self.progress)
                self.progress.check()
                # the panels' whole-graph facts come after the first paint (Document)
                facts: dict[str, object] = {}
            except Cancelled:
                return
            except XocviewError as e:
                self._emit_failed(str(e))
                return
            except Exception as e:  # a bug of ours, or no memory left: said, never a crash
                self._emit_failed(failure_message(str(self.path), e))
                return
        if not self.cancelled:
            self.signals.done.emit(self, graph, drawing, expanded, fmt, facts)

    def _read(self) -> tuple[Graph, str]:
        """The graph and its format's name: read in a child process unless the file is JSON
        (or no child can be started here); read here when the child's graph cannot be sent."""
        if reads_apart(self.path):
            made = self._read_apart()
            if made is not None:
                return made
        graph, fmt = load_source(Source(self.path))
        return graph, fmt.NAME

    def _read_apart(self) -> tuple[Graph, str] | None:
        self.progress.check()
        try:
            child = ChildLoad(self.path)  # the first one waits for the fork server to start
        except (OSError, RuntimeError):
            return None  # no process can be started here: read in this thread
        with self._lock:
            self.child = child
            if self.cancelled:  # cancelled while it started
                child.kill()
        try:
            return child.result(self.progress.check)
        except XocviewError:
            self.progress.check()  # killed by Cancel: that is no failure
            raise
        finally:
            self.child = None

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
            # without the file's name, which the document puts in front
            self.signals.failed.emit(generation, failure_message("", e, "lay it out")[2:])
            return
        if not self.progress.cancelled:
            self.signals.done.emit(generation, drawing, (expanded, direction, show_weights))
