"""Running a graph from the window: the Run menu, the worker, live heat, the Profile dock.

The executor runs a snapshot of the graph in a worker thread. Each node's time reaches the
canvas in batches (a few per second) so that the user watches the heat spread; at the end the
medians are recorded as ``performance.time.cpu`` through the undo stack. An .onnx file can be
run on onnxruntime instead: its per-node profile arrives at the end, recorded as
``performance.time.onnxruntime``. After a run the canvas and the Profile pane show the run's
engine; View > Time From switches between the engines whose times the graph stores.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QWidget,
)

from xocview.errors import RunError, XocviewError, shorten
from xocview.executor import RunResult, run
from xocview.executor.onnxruntime_engine import run_onnxruntime
from xocview.model import Graph, edits
from xocview.model.analyses.profile import (
    RUN_TIMES,
    TIME_KEYS,
    engine_label,
    subtree_sums,
    time_key,
    times_as_metadata,
)
from xocview.ui.actions import add_action
from xocview.ui.commands import perform
from xocview.ui.document import Document
from xocview.ui.failure_text import failure_message
from xocview.ui.panels import follow
from xocview.ui.panels.profile import ProfilePanel, format_ms
from xocview.ui.run_dialog import RunOptions, ask_run_options

__all__ = ["AskRunOptions", "RunController", "RunJob"]

AskRunOptions = Callable[[QWidget, Document], "RunOptions | None"]
BATCH_SECONDS = 0.1  # how often measured times reach the canvas during a run
COLOURINGS = (
    ("category", "Colour by &Category", "Ctrl+Alt+0"),
    ("time", "Colour by Measured &Time", "Ctrl+Alt+T"),
    ("flops", "Colour by &FLOPs", "Ctrl+Alt+F"),
    ("params", "Colour by &Parameters", "Ctrl+Alt+P"),
)


class RunSignals(QObject):
    """``progress(batch, done, total)`` and ``iteration(text)`` (a Loop or Scan node's pass, a
    few times a second), then ``finished(result)`` or ``failed(text, partial)``."""

    progress = Signal(object, int, int)
    iteration = Signal(str)
    finished = Signal(object)
    failed = Signal(str, object)


class RunJob:
    """One run of the executor on a snapshot of a document's graph (``run`` in a thread), or
    of onnxruntime on the .onnx file at ``model_path`` that the graph was read from."""

    def __init__(self, graph: Graph, options: RunOptions, model_path: Path | None = None) -> None:
        self.graph, self.options, self.model_path = graph, options, model_path
        self.cancelled = False
        self.signals = RunSignals()
        self._batch: list[tuple[str, float]] = []
        self._sent = time.monotonic()

    def _progress(self, done: int, total: int, node_id: str, seconds: float) -> None:
        self._batch.append((node_id, seconds))
        now = time.monotonic()
        if now - self._sent >= BATCH_SECONDS or done == total:
            self.signals.progress.emit(self._batch, done, total)
            self._batch, self._sent = [], now

    def _iteration(self, node_id: str, done: int, total: int | None) -> None:
        of = f" of {total:,}" if total is not None else ""
        self.signals.iteration.emit(f"{shorten(node_id)}: iteration {done:,}{of}")

    def _passes(self, done: int, total: int) -> None:
        self.signals.progress.emit([], done, total)

    def _result(self) -> RunResult:
        o = self.options
        common: dict[str, Any] = {
            "repeat": o.repeat,
            "warmup": o.warmup,
            "seed": o.seed,
            "symbol_default": o.symbol_default,
            "shapes": dict(o.shapes),
            "threads": o.threads,
            "cancel": lambda: self.cancelled,
        }
        if o.engine == "onnxruntime":
            if self.model_path is None:
                raise XocviewError("onnxruntime runs .onnx files; this graph has none")
            return run_onnxruntime(
                self.graph,
                self.model_path,
                dict(o.feeds),
                optimization=o.optimization,
                on_pass=self._passes,
                **common,
            )
        return run(
            self.graph,
            dict(o.feeds),
            on_progress=self._progress,
            on_iteration=self._iteration,
            **common,
        )

    def run(self) -> None:
        try:
            result = self._result()
        except RunError as e:
            self.signals.failed.emit(str(e), e.partial)
            return
        except XocviewError as e:
            self.signals.failed.emit(str(e), None)
            return
        except Exception as e:  # a bug of ours: report it, never kill the window
            name = self.model_path.name if self.model_path else self.graph.name
            self.signals.failed.emit(failure_message(name, e, "run it"), None)
            return
        self.signals.finished.emit(result)


class RunController(QObject):
    """The Run menu and the Profile dock of a window; one run at a time.

    ``window`` gets the Profile dock and the progress bar, ``menu`` the Run actions,
    ``time_menu`` (View > Time From) one choice per engine whose times the graph stores, and
    ``focus_selection`` is called when the Profile panel selects a node.
    """

    def __init__(
        self,
        window: QMainWindow,
        menu: QMenu,
        focus_selection: Callable[[], None],
        time_menu: QMenu | None = None,
    ) -> None:
        super().__init__(window)
        self.window = window
        self.doc: Document | None = None
        self.time_menu = time_menu if time_menu is not None else QMenu("Time From", window)
        self.time_group = QActionGroup(self)
        self._time_shown: tuple[list[str], str] | None = None  # what the time menu offers
        self.job: RunJob | None = None
        self.job_doc: Document | None = None
        self.ask: AskRunOptions = ask_run_options  # replaced by tests: no modal dialog
        self.messages: list[str] = []
        # the engine and optimization of each document's last run: what its Profile pane shows
        self.engines: weakref.WeakKeyDictionary[Document, tuple[str, str]] = (
            weakref.WeakKeyDictionary()
        )
        self.profile = ProfilePanel(window)
        self.profile.jumped.connect(focus_selection)
        self.dock = QDockWidget("Profile", window)
        self.dock.setObjectName("profile")
        self.dock.setWidget(self.profile)
        window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, self.dock)
        problems = window.findChild(QDockWidget, "problems")
        if problems is not None:
            window.tabifyDockWidget(problems, self.dock)
        self.dock.hide()  # until the first run, or a graph with times (View > Panels shows it)
        if problems is not None:
            problems.raise_()
        self.bar = QProgressBar(window)
        self.bar.setMaximumWidth(160)
        self.bar.setFormat("run %p%")
        self.stop_button = QPushButton("Stop", window)
        self.stop_button.clicked.connect(self.stop)
        window.statusBar().addPermanentWidget(self.bar)
        window.statusBar().addPermanentWidget(self.stop_button)
        self._show_running(False)
        self._make_menu(menu)

    def _make_menu(self, menu: QMenu) -> None:
        w = self.window
        self.run_action = add_action(w, menu, "&Run Graph...", self.start, "F5")
        self.stop_action = add_action(w, menu, "&Stop", self.stop, "Shift+F5")
        menu.addSeparator()
        group = QActionGroup(self)
        self.colour_actions: dict[str, QAction] = {}
        for mode, text, key in COLOURINGS:
            act = add_action(
                w, menu, text, lambda _=False, m=mode: self.colour_by(m), key, checkable=True
            )
            group.addAction(act)
            self.colour_actions[mode] = act
        self.log_action = add_action(
            w, menu, "&Logarithmic Scale", self.set_log, "Ctrl+Alt+G", checkable=True
        )
        self.log_action.setChecked(True)
        self.set_document(None)

    # -- document ---------------------------------------------------------------------------

    def set_document(self, doc: Document | None) -> None:
        # the engines with times change with edits (a run, its undo), the one shown with both
        follow(self.doc, doc, "model_changed", self._fill_time_menu)
        self.doc = follow(self.doc, doc, "heat_changed", self._fill_time_menu)
        self._fill_time_menu()
        if doc is not None and doc in self.engines:
            self.profile.set_engine(*self.engines[doc])
        else:
            self.profile.set_engine(None)
        self.profile.set_document(doc)
        if doc is not None and doc.time_sources():
            self.dock.show()  # a file with times saved in it: where they are listed
        for mode, act in self.colour_actions.items():
            act.setEnabled(doc is not None)
            act.setChecked(doc is not None and doc.colour_by == mode)
        self.log_action.setChecked(doc.heat_log if doc is not None else True)
        self.run_action.setEnabled(doc is not None and self.job is None)
        self.stop_action.setEnabled(self.job is not None)

    def colour_by(self, mode: str) -> None:
        if self.doc is not None:
            self.doc.set_colour_by(mode)
            self.colour_actions[mode].setChecked(True)

    def set_log(self, on: bool) -> None:
        if self.doc is not None:
            self.doc.set_heat_log(bool(on))

    def show_times_of(self, engine: str) -> None:
        """Colour by the times stored as ``performance.time.<engine>`` (View > Time From)."""
        if self.doc is not None:
            self.doc.set_time_engine(engine)
            self.colour_by("time")

    def _fill_time_menu(self) -> None:
        """View > Time From: one checkable choice per engine whose times the graph stores,
        the one shown checked; the menu shows only when there are two or more."""
        doc = self.doc
        sources = doc.time_sources() if doc is not None else []
        shown = doc.shown_time_engine() if doc is not None else ""
        if self._time_shown == (sources, shown):
            return  # heat_changed comes a few times a second while a run runs
        self._time_shown = (list(sources), shown)
        for act in self.time_group.actions():
            self.time_group.removeAction(act)
        self.time_menu.clear()  # deletes the actions it owns
        for engine in sources:
            act = QAction(engine_label(engine), self.time_menu)
            act.setCheckable(True)
            act.setChecked(engine == shown)
            act.setStatusTip(f"Colour by the times stored as {time_key(engine)}")
            act.triggered.connect(lambda _=False, e=engine: self.show_times_of(e))
            self.time_group.addAction(act)
            self.time_menu.addAction(act)
        self.time_menu.menuAction().setVisible(len(sources) > 1)

    # -- running ----------------------------------------------------------------------------

    def start(self) -> RunJob | None:
        """Ask for the options, then run the current document's graph in the background."""
        doc = self.doc
        if doc is None or self.job is not None:
            return None
        options = self.ask(self.window, doc)
        if options is None:
            return None
        job = RunJob(doc.graph.snapshot(), options, doc.path)
        job.signals.progress.connect(self._progress)
        job.signals.iteration.connect(self._iteration)
        job.signals.finished.connect(self._finished)
        job.signals.failed.connect(self._failed)
        self.job, self.job_doc = job, doc
        if options.engine == "xocview":  # onnxruntime's times come all at once, at the end
            doc.set_live_times(np.full(len(doc.graph.nodes), np.nan))
        self._show_running(True)
        self.dock.show()
        self.dock.raise_()
        # A daemon thread, not Qt's pool: Qt waits for its pool at exit, and one long kernel
        # would keep the window from closing; a daemon thread is abandoned when the app ends.
        threading.Thread(target=job.run, name="xocview-run", daemon=True).start()
        return job

    def stop(self) -> None:
        if self.job is not None:
            self.job.cancelled = True

    def _iteration(self, text: str) -> None:
        """A long Loop's passes on the progress bar, which otherwise stands still on it."""
        self.bar.setFormat(f"%p%  {text}")

    def _show_running(self, running: bool) -> None:
        self.bar.setFormat("%p%")
        self.bar.setVisible(running)
        self.stop_button.setVisible(running)
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        if hasattr(self, "run_action"):
            self.run_action.setEnabled(not running and self.doc is not None)
            self.stop_action.setEnabled(running)

    def _progress(self, batch: list[tuple[str, float]], done: int, total: int) -> None:
        doc = self.job_doc
        if doc is None:
            return
        self.bar.setRange(0, total)
        self.bar.setValue(done)
        if doc.live_ms is None:  # onnxruntime: passes, not nodes
            return
        own = doc.live_ms.copy()
        index = doc.graph.index
        for node_id, seconds in batch:  # the latest time of a node until the medians arrive
            if index.has_node(node_id):
                own[index.node_position(node_id)] = seconds * 1e3
        leaves = np.where(doc.hierarchy.is_group, np.nan, own)
        doc.set_live_times(subtree_sums(leaves, doc.hierarchy))

    def _done(self) -> Document | None:
        doc = self.job_doc
        if doc is not None and self.job is not None:
            options = self.job.options
            self.engines[doc] = (options.engine, options.optimization)
        self.job, self.job_doc = None, None
        self._show_running(False)
        if doc is not None:
            doc.set_live_times(None)
        return doc

    def _finished(self, result: RunResult) -> None:
        doc = self._done()
        if doc is None:
            return
        self._record(doc, result)
        state = "cancelled after" if result.cancelled else "timed"
        engine, _ = self.engines.get(doc, ("xocview", ""))
        where = (
            "on onnxruntime (see the Profile pane)"
            if engine == "onnxruntime"
            else f"peak memory {result.peak_bytes / 2**20:.1f} MB"
        )
        self.window.statusBar().showMessage(
            f"Run {state} {len(result.node_times):,} nodes: {format_ms(result.total_time * 1e3)} "
            f"per pass, {where}",
            10000,
        )

    def _failed(self, message: str, partial: object) -> None:
        doc = self._done()
        self.messages.append(message)
        if doc is not None and isinstance(partial, RunResult) and partial.node_times:
            self._record(doc, partial)  # the timings so far are kept
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Run stopped",
            message,
            QMessageBox.StandardButton.Ok,
            self.window,
        )
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def _record(self, doc: Document, result: RunResult) -> None:
        """Store the medians in node metadata under the engine's key (one undo step), colour
        the canvas by them and show the profile. An undo takes the times away, and the canvas
        shows the other engine's times, if any, until a redo brings them back."""
        doc.last_run = result
        engine, _ = self.engines.get(doc, ("xocview", ""))
        index = doc.graph.index
        times = {k: v for k, v in result.node_times.items() if index.has_node(k)}
        if times:
            perform(
                doc,
                edits.record_run,
                TIME_KEYS[engine],
                times_as_metadata(times),
                result.shapes,
                f"record {'' if engine == 'xocview' else engine + ' '}run times of "
                f"{len(times):,} nodes",
            )
        doc.set_time_engine(RUN_TIMES[engine])
        doc.set_colour_by("time")
        if doc is self.doc:
            self.set_document(doc)
