"""The main window's tabs and how files get into them: load jobs that become tabs, the busy
bar with Cancel while loads or layouts run, and the messages for what could not be done.

``MainWindow`` builds on this; it sets the attributes declared here in its ``__init__``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QUndoGroup
from PySide6.QtWidgets import (
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
)

from xocview.formats import registry
from xocview.model import Graph
from xocview.ui.actions import Menus
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.view import GraphView, ViewPlace
from xocview.ui.document import Document
from xocview.ui.open_failures import OpenFailures
from xocview.ui.recent_files import RecentFiles
from xocview.ui.workers import LoadJob

__all__ = ["FILE_FILTER", "OpeningWindow"]


FILE_FILTER = registry.file_filter()  # every format of the registry, by its extensions


class OpeningWindow(QMainWindow):
    """Opens files in tabs and says what failed; ``errors`` keeps every message shown."""

    settings: QSettings
    tabs: QTabWidget
    undo_group: QUndoGroup
    menus: Menus
    recent_files: RecentFiles
    open_failures: OpenFailures
    theme_name: str
    errors: list[str]
    jobs: list[LoadJob]
    reloading: dict[Path, tuple[ViewPlace, int]]  # files being read again: place, tab index

    def _make_busy_bar(self) -> None:
        """The status bar's text, progress bar and Cancel, hidden until a load or layout runs."""
        self._progress = QProgressBar(self)
        self._progress.setRange(0, 0)
        self._progress.setMaximumWidth(160)
        self._cancel = QPushButton("Cancel", self)
        self._cancel.clicked.connect(self.cancel_work)
        self._status = QLabel(self)
        bar = self.statusBar()
        bar.addWidget(self._status, 1)
        bar.addPermanentWidget(self._progress)
        bar.addPermanentWidget(self._cancel)
        # Their room is kept while they are hidden: showing them must not change the status
        # bar's height, which would resize the canvas and repaint a big drawing from scratch.
        for widget in (self._progress, self._cancel):
            policy = widget.sizePolicy()
            policy.setRetainSizeWhenHidden(True)
            widget.setSizePolicy(policy)
        self._set_busy(False)

    # -- the tabs ------------------------------------------------------------------------

    def _view(self) -> GraphView | None:
        w = self.tabs.currentWidget()
        return w if isinstance(w, GraphView) else None

    def _current_document(self) -> Document | None:
        view = self._view()
        return view.doc if view is not None else None

    def _documents(self) -> list[Document]:
        views = (self.tabs.widget(i) for i in range(self.tabs.count()))
        return [v.doc for v in views if isinstance(v, GraphView)]

    # -- opening ----------------------------------------------------------------------------

    def open_dialog(self) -> None:
        start = str(self.settings.value("last_dir", str(Path.home())))
        files, _ = QFileDialog.getOpenFileNames(self, "Open graphs", start, FILE_FILTER)
        self.open_paths([Path(name) for name in files])

    def open_paths(self, paths: Sequence[Path]) -> list[LoadJob]:
        """Start loading each path; good files open in tabs, failures go to one list."""
        return [self.open_path(path) for path in paths]

    def open_path(self, path: Path) -> LoadJob:
        """Start loading ``path`` in the background; a tab opens when it is ready.

        A failure is listed in ``open_failures`` (one non-modal list for all of them). A file
        that is open already is not read again: its tab comes to the front, edits and view as
        they are, and the returned job is cancelled before it starts.
        """
        job = LoadJob(path)
        open_view = self._view_of_file(path)
        if open_view is not None:
            self.tabs.setCurrentWidget(open_view)
            self.statusBar().showMessage(f"{path.name} is open already", 5000)
            job.cancel()
            return job
        job.signals.done.connect(self._loaded)
        job.signals.failed.connect(self._failed)
        job.signals.progress.connect(lambda _job, done, total: self._show_progress(done, total))
        self.jobs.append(job)
        self._set_busy(True, f"Opening {path.name}...")
        job.start()
        return job

    def _view_of_file(self, path: Path) -> GraphView | None:
        """The tab showing the file at ``path`` (the same file by any spelling), if one does."""
        try:
            wanted = path.resolve()
        except (OSError, RuntimeError):  # a loop of links: no tab can match it
            return None
        for i in range(self.tabs.count()):
            view = self.tabs.widget(i)
            if isinstance(view, GraphView) and view.doc.path is not None:
                try:
                    if Path(view.doc.path).resolve() == wanted:
                        return view
                except (OSError, RuntimeError):
                    continue
        return None

    def add_document(
        self,
        graph: Graph,
        path: Path | None,
        drawing: Drawing | None = None,
        expanded: set[str] | None = None,
        fmt: str = "",
        facts: dict[str, object] | None = None,
    ) -> GraphView:
        doc = Document(graph, path, fmt, drawing=drawing, expanded=expanded, facts=facts)
        # View > Weights as Nodes decides for every new tab (off: weights folded into boxes)
        doc.show_weights = self.menus.weights.isChecked()
        if doc.drawing.weights_as_nodes != doc.show_weights:
            doc.relayout(keep_order=False)
        view = GraphView(doc, self, self.theme_name)
        view.refused.connect(lambda message: self.report(message, "Edit refused"))
        # bound methods, not lambdas: Qt drops them with the window, so that a document whose
        # work ends after its window closed does not call into a deleted one
        doc.busy_changed.connect(self._doc_busy)
        doc.progress.connect(self._show_progress)
        doc.failed.connect(self._layout_failed)
        self.undo_group.addStack(doc.undo_stack)
        doc.dirty_changed.connect(view.dirty_changed)
        view.dirty_changed.connect(self._mark_sender)
        index = self.tabs.addTab(view, doc.title)
        self.tabs.setTabToolTip(index, str(path) if path else doc.title)
        self.tabs.setCurrentIndex(index)
        view.first_view()
        view.setFocus()  # the canvas keys (0, F, arrows) work without a click first
        self._update_busy()
        return view

    def _loaded(
        self,
        job: LoadJob,
        graph: Graph,
        drawing: Drawing,
        expanded: set[str],
        fmt: str,
        facts: dict[str, object],
    ) -> None:
        self._finish(job)
        if job.cancelled:
            return
        self.recent_files.remember(job.path)
        open_view = self._view_of_file(job.path)  # opened twice before either load ended
        if open_view is not None:
            self.tabs.setCurrentWidget(open_view)
            return
        view = self.add_document(graph, job.path, drawing, expanded, fmt, facts)
        back = self.reloading.pop(job.path, None)
        if back is not None:  # a reload: the same tab's place and the user's place in it
            place, index = back
            self.tabs.tabBar().moveTab(self.tabs.indexOf(view), min(index, self.tabs.count() - 1))
            view.restore(place)

    def _failed(self, job: LoadJob, message: str) -> None:
        self._finish(job)
        if job.cancelled:
            return
        self.errors.append(message)
        self.open_failures.add(message)

    def _finish(self, job: LoadJob) -> None:
        if job in self.jobs:
            self.jobs.remove(job)
        self._update_busy()

    def cancel_loading(self) -> None:
        """Stop every load: each stops at its next step, and its result is dropped."""
        for job in self.jobs:
            job.cancel()
        self.jobs.clear()
        self._update_busy()

    def cancel_work(self) -> None:
        """Cancel: the loads, and the layouts running for open tabs (their change undone)."""
        self.cancel_loading()
        for doc in self._documents():
            doc.cancel_relayout()
        self._update_busy()

    def _doc_busy(self, _busy: bool) -> None:
        self._update_busy()

    def _layout_failed(self, message: str) -> None:
        self.report(message, "Cannot lay out the graph")

    def _update_busy(self) -> None:
        """The progress bar and Cancel show while a load or a tab's layout runs."""
        if self.jobs:
            names = ", ".join(job.path.name for job in self.jobs)
            self._set_busy(True, f"Opening {names}...")
        elif any(doc.busy for doc in self._documents()):
            self._set_busy(True, "Laying out...")
        else:
            self._set_busy(False)

    def _set_busy(self, busy: bool, text: str = "") -> None:
        if busy and not self._progress.isVisible():
            self._progress.setRange(0, 0)  # no figure yet: a busy indicator
        self._progress.setVisible(busy)
        self._cancel.setVisible(busy)
        self._status.setText(text if busy else "")

    def _show_progress(self, done: int, total: int) -> None:
        if self._progress.isVisible() and total > 0:
            self._progress.setRange(0, 1000)
            self._progress.setValue(round(1000 * done / total))

    # -- messages, tab titles -----------------------------------------------------------------

    def report(self, message: str, title: str = "Cannot save") -> None:
        """Show one message in a box that does not block the other windows' work."""
        self.errors.append(message)
        box = QMessageBox(
            QMessageBox.Icon.Warning, title, message, QMessageBox.StandardButton.Ok, self
        )
        box.setTextFormat(Qt.TextFormat.PlainText)  # a name from a file is never markup
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.open()

    def report_internal(self, message: str) -> None:
        """A failure nobody caught (``guard``), in a box."""
        self.report(message, "Internal error")

    def show_trouble(self, message: str) -> None:
        """Work in the background could not be finished (labels, facts, a picture): the
        window goes on without it, and says so in the status bar."""
        self.errors.append(message)
        self.statusBar().showMessage(message)

    def _mark_sender(self) -> None:
        view = self.sender()
        if isinstance(view, GraphView):
            self._mark(view)

    def _mark(self, view: GraphView) -> None:
        """A '*' on the tab and in the window title while a document has unsaved changes."""
        index = self.tabs.indexOf(view)
        if index >= 0:
            self.tabs.setTabText(index, view.doc.title + ("*" if view.doc.dirty else ""))
        if view is self._view():
            self.setWindowTitle(f"{view.doc.title}[*] - xocview")
            self.setWindowModified(view.doc.dirty)
