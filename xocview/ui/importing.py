"""File > Import Times: a profile from another runtime put onto the open graph, and View >
Colour by Metric for the named metrics it may bring.

The import is one model edit (``edits.import_values``) on the undo stack: one Undo takes every
value away. Times colour the canvas at once through View > Time From's choice of source; a
Model Explorer metric through its own colour mode. The account of the import (matched share,
unmatched event names) is shown in a box that does not block the window, with the full list
under its details.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import QAction, QActionGroup
from PySide6.QtWidgets import QFileDialog, QMainWindow, QMenu, QMessageBox, QWidget

from xocview.errors import XocviewError
from xocview.formats.profiles import ImportedProfile, read_profile
from xocview.model import Graph, edits
from xocview.model.analyses.metrics import metric_key, metric_mode, metric_names
from xocview.ui.commands import perform
from xocview.ui.document import Document
from xocview.ui.failure_text import failure_message
from xocview.ui.panels import follow
from xocview.ui.running import RunController

__all__ = ["AskProfile", "ProfileImporter"]

AskProfile = Callable[[QWidget, Path], "Path | None"]
PROFILE_FILTER = "Profiles (*.json);;All files (*)"
_SHOWN = 5  # unmatched names the message lists
_LISTED = 500  # unmatched names its details list


class _ReadSignals(QObject):
    done = Signal(object, object)  # (path, ImportedProfile)
    failed = Signal(object, str)  # (path, message)


class _ReadJob(QRunnable):
    """A profile read and matched in a worker (the graph is only read): a PyTorch trace of
    tens of megabytes takes seconds, which the window must not wait for."""

    def __init__(self, path: Path, graph: Graph) -> None:
        super().__init__()
        self.path, self.graph = path, graph
        self.signals = _ReadSignals()

    def run(self) -> None:
        try:
            result = read_profile(self.path, self.graph, None)
        except XocviewError as e:
            self.signals.failed.emit(self.path, str(e))
            return
        except Exception as e:  # a bug of ours: said, never a crash of the window
            self.signals.failed.emit(self.path, failure_message(self.path.name, e, "import it"))
            return
        self.signals.done.emit(self.path, result)


def ask_profile(parent: QWidget, start: Path) -> Path | None:
    name, _ = QFileDialog.getOpenFileName(parent, "Import times", str(start), PROFILE_FILTER)
    return Path(name) if name else None


class ProfileImporter(QObject):
    """File > Import Times for the window's current document, and the metrics menu.

    ``ask`` picks the file (replaced by tests: no modal dialog); ``messages`` keeps the text of
    every account and refusal shown.
    """

    def __init__(self, window: QMainWindow, runner: RunController, metrics_menu: QMenu) -> None:
        super().__init__(window)
        self.window, self.runner, self.metrics_menu = window, runner, metrics_menu
        self.doc: Document | None = None
        self.ask: AskProfile = ask_profile
        self.messages: list[str] = []
        self._reading: tuple[Document, int, _ReadJob] | None = None  # the read under way
        self.metric_group = QActionGroup(self)
        self.metric_group.setExclusionPolicy(QActionGroup.ExclusionPolicy.ExclusiveOptional)

    def set_document(self, doc: Document | None) -> None:
        # the metrics change with edits (an import, its undo); the one checked with the colouring
        follow(self.doc, doc, "model_changed", self._fill_metrics)
        self.doc = follow(self.doc, doc, "heat_changed", self._check_metric)
        self._fill_metrics()

    def import_dialog(self) -> None:
        """Ask for a profile file and import it onto the current graph."""
        if self.doc is None:
            return
        start = self.doc.path.parent if self.doc.path is not None else Path.home()
        path = self.ask(self.window, start)
        if path is not None:
            self.read_in_background(path)

    @property
    def idle(self) -> bool:
        """No profile is being read."""
        return self._reading is None

    def read_in_background(self, path: Path) -> None:
        """Read ``path`` in a worker, then import it as ``import_file`` does."""
        if self.doc is None:
            return
        job = _ReadJob(path, self.doc.graph)
        job.signals.done.connect(self._read)
        job.signals.failed.connect(self._read_failed)
        self._reading = (self.doc, self.doc.edit_count, job)
        self.window.statusBar().showMessage(f"Reading {path.name}...")
        QThreadPool.globalInstance().start(job)

    def _read(self, path: Path, result: ImportedProfile) -> None:
        reading, self._reading = self._reading, None
        self.window.statusBar().clearMessage()
        doc = self.doc
        if reading is None or doc is None:
            return
        if reading[0] is not doc or reading[1] != doc.edit_count:
            self.import_file(path)  # the graph changed meanwhile: match it as it is now
            return
        self._store(path, doc, result)

    def _read_failed(self, path: Path, message: str) -> None:
        self._reading = None
        self.window.statusBar().clearMessage()
        self._show(message, "Cannot import the profile", QMessageBox.Icon.Warning)

    def import_file(self, path: Path, name: str | None = None) -> ImportedProfile | None:
        """Read ``path`` onto the current graph, store its values as one undo step and colour
        by them; the account goes to a message. None when nothing was stored."""
        doc = self.doc
        if doc is None:
            return None
        try:
            result = read_profile(path, doc.graph, name)
        except XocviewError as e:
            self._show(str(e), "Cannot import the profile", QMessageBox.Icon.Warning)
            return None
        return self._store(path, doc, result)

    def _store(self, path: Path, doc: Document, result: ImportedProfile) -> ImportedProfile | None:
        if not result.values:
            text = result.nothing_matched(path.name, doc.title)
            self._show(text, "Nothing imported", QMessageBox.Icon.Warning, result)
            return None
        refused = perform(doc, edits.import_values, result.key, result.values, result.description)
        if refused is not None:
            self._show(refused, "Cannot import the profile", QMessageBox.Icon.Warning)
            return None
        if result.is_time:
            self.runner.show_times_of(result.source)
        else:
            doc.set_colour_by(metric_mode(result.source))
        text = "\n".join(result.report_lines(_SHOWN))
        self._show(text, "Profile imported", QMessageBox.Icon.Information, result)
        return result

    def _show(
        self,
        text: str,
        title: str,
        icon: QMessageBox.Icon,
        result: ImportedProfile | None = None,
    ) -> None:
        """A box that does not block the window; the whole account under Show Details."""
        self.messages.append(text)
        box = QMessageBox(icon, title, text, QMessageBox.StandardButton.Ok, self.window)
        box.setTextFormat(Qt.TextFormat.PlainText)  # names from files are never markup
        if result is not None:
            box.setDetailedText("\n".join(result.report_lines(_LISTED)))
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    # -- View > Colour by Metric -------------------------------------------------------------

    def colour_by_metric(self, name: str) -> None:
        if self.doc is not None:
            self.doc.set_colour_by(metric_mode(name))

    def _fill_metrics(self) -> None:
        """One checkable choice per named metric the graph stores; hidden when there is none."""
        doc = self.doc
        names = metric_names(doc.graph) if doc is not None else []
        for act in self.metric_group.actions():
            self.metric_group.removeAction(act)
        self.metrics_menu.clear()  # deletes the actions it owns
        for name in names:
            act = QAction(name, self.metrics_menu)
            act.setCheckable(True)
            act.setData(metric_mode(name))
            act.setStatusTip(f"Colour by the values stored as {metric_key(name)}")
            act.triggered.connect(lambda _=False, n=name: self.colour_by_metric(n))
            self.metric_group.addAction(act)
            self.metrics_menu.addAction(act)
        self.metrics_menu.menuAction().setVisible(bool(names))
        self._check_metric()

    def _check_metric(self) -> None:
        shown = self.doc.colour_by if self.doc is not None else ""
        for act in self.metric_group.actions():
            act.setChecked(act.data() == shown)
