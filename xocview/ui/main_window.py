"""The main window: one tab per graph, the inspector dock, menus with standard shortcuts."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import (
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QUndoGroup,
)
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QUndoView,
)

from xocview import __version__
from xocview.errors import XocviewError
from xocview.model import Graph
from xocview.ui.actions import make_menus
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.view import GraphView
from xocview.ui.compare import Comparer, CompareTab
from xocview.ui.document import Document
from xocview.ui.guard import relay
from xocview.ui.importing import ProfileImporter
from xocview.ui.load_process import warm_up
from xocview.ui.open_failures import OpenFailures
from xocview.ui.palette import apply_palette
from xocview.ui.panels.inspector import Inspector
from xocview.ui.panels.problems import ProblemsPanel
from xocview.ui.panels.search import SearchPanel
from xocview.ui.recent_files import RecentFiles
from xocview.ui.render import render_to_file
from xocview.ui.running import RunController
from xocview.ui.saving import AskPath, AskUnsaved, ask_path, ask_unsaved, save_document
from xocview.ui.workers import LoadJob

__all__ = ["MainWindow"]

FILE_FILTER = "Graph files (*.onnx *.json *.xoc);;ONNX (*.onnx);;JSON (*.json);;All files (*)"
INSPECTOR_WIDTH = 380  # pixels, at first start
BOTTOM_HEIGHT = 180  # pixels, at first start: the canvas gets most of the height


class MainWindow(QMainWindow):
    """Opens files in tabs; ``errors`` keeps the messages shown for files that failed."""

    def __init__(self, settings: QSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or QSettings("xocview", "xocview")
        self.setWindowTitle("xocview")
        self.resize(1280, 860)
        self.setAcceptDrops(True)
        self.theme_choice = str(self.settings.value("theme", "system"))
        self.theme_name = _effective_theme(self.theme_choice)
        apply_palette(self.theme_name)
        QGuiApplication.styleHints().colorSchemeChanged.connect(
            lambda _scheme: self.set_theme(self.theme_choice)
        )
        self.errors: list[str] = []
        relay().said.connect(self.show_trouble)  # what worker threads could not finish
        warm_up()  # the fork server that reads ONNX files starts now, not at the first open
        self.ask_path: AskPath = ask_path  # replaced by tests: no modal dialogs there
        self.ask_unsaved: AskUnsaved = ask_unsaved
        self.undo_group = QUndoGroup(self)
        self.jobs: list[LoadJob] = []
        self.open_failures = OpenFailures(self)  # one list for files that fail, not a box each
        self.tabs = QTabWidget(self)
        self.tabs.setTabsClosable(True)
        self.tabs.setDocumentMode(True)
        self.tabs.tabCloseRequested.connect(self.close_tab)
        self.tabs.currentChanged.connect(self._tab_changed)
        self.setCentralWidget(self.tabs)
        self.inspector = Inspector(self)
        dock = QDockWidget("Inspector", self)
        dock.setObjectName("inspector")
        dock.setWidget(self.inspector)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
        self.search = SearchPanel(self)
        self.search.jumped.connect(lambda: self.view_do("focus_selection"))
        self.search_dock = QDockWidget("Search", self)
        self.search_dock.setObjectName("search")
        self.search_dock.setWidget(self.search)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.search_dock)
        self.splitDockWidget(self.search_dock, dock, Qt.Orientation.Vertical)  # search on top
        self.search_dock.hide()  # until Find
        self.problems = ProblemsPanel(self)
        self.problems.jumped.connect(lambda: self.view_do("focus_selection"))
        problems_dock = QDockWidget("Problems", self)
        problems_dock.setObjectName("problems")
        problems_dock.setWidget(self.problems)
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, problems_dock)
        history = QDockWidget("Undo History", self)
        history.setObjectName("history")
        history.setWidget(QUndoView(self.undo_group, history))
        self.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, history)
        self.tabifyDockWidget(problems_dock, history)
        problems_dock.raise_()
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
        self.menus = make_menus(self, self)
        self.recent_files = RecentFiles(self, self.settings, self.menus.recent, self.open_path)
        self.runner = RunController(
            self, self.menus.run, lambda: self.view_do("focus_selection"), self.menus.time_from
        )
        self.importer = ProfileImporter(self, self.runner, self.menus.metrics)
        self.comparer = Comparer(
            self, self.tabs, self._current_document, self.report, lambda: self.theme_name
        )
        # Room for values such as shapes and FLOPs notes; a saved layout overrides it.
        self.resizeDocks([dock], [INSPECTOR_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks([problems_dock], [BOTTOM_HEIGHT], Qt.Orientation.Vertical)
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("state")
        if state is not None:
            self.restoreState(state)

    # -- the current view ------------------------------------------------------------------

    def _view(self) -> GraphView | None:
        w = self.tabs.currentWidget()
        return w if isinstance(w, GraphView) else None

    def _current_document(self) -> Document | None:
        view = self._view()
        return view.doc if view is not None else None

    def view_do(self, name: str, *args: object) -> None:
        """Zoom and fit act on the current view; on a comparison, on the side last used (the
        other side follows)."""
        view = self._view()
        w = self.tabs.currentWidget()
        if view is None and isinstance(w, CompareTab):
            view = w.active_side()
        if view is not None:
            getattr(view, name)(*args)

    def doc_do(self, name: str, *args: object) -> None:
        view = self._view()
        if view is not None:
            getattr(view.doc, name)(*args)

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

        A failure is listed in ``open_failures`` (one non-modal list for all of them).
        """
        job = LoadJob(path)
        job.signals.done.connect(self._loaded)
        job.signals.failed.connect(self._failed)
        job.signals.progress.connect(lambda _job, done, total: self._show_progress(done, total))
        self.jobs.append(job)
        self._set_busy(True, f"Opening {path.name}...")
        job.start()
        return job

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
        self.add_document(graph, job.path, drawing, expanded, fmt, facts)
        self.recent_files.remember(job.path)

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

    def _documents(self) -> list[Document]:
        views = (self.tabs.widget(i) for i in range(self.tabs.count()))
        return [v.doc for v in views if isinstance(v, GraphView)]

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

    def reload(self) -> None:
        view = self._view()
        if view is not None and view.doc.path is not None:
            index = self.tabs.currentIndex()
            self.close_tab(index)
            self.open_path(view.doc.path)

    def close_tab(self, index: int) -> bool:
        """Close a tab, asking first when it has unsaved changes; False when cancelled."""
        widget = self.tabs.widget(index)
        if widget is None:
            return True
        if isinstance(widget, GraphView) and not self._may_discard(widget):
            return False
        if isinstance(widget, GraphView):
            self.undo_group.removeStack(widget.doc.undo_stack)
            widget.doc.cancel_relayout()
        self.tabs.removeTab(index)
        widget.deleteLater()
        self._update_busy()
        return True

    def _may_discard(self, view: GraphView) -> bool:
        if not view.doc.dirty:
            return True
        answer = self.ask_unsaved(self, view.doc)
        if answer == "save":
            return self._save(view, save_as=False)
        return answer == "discard"

    def save(self, save_as: bool = False) -> bool:
        view = self._view()
        return self._save(view, save_as) if view is not None else False

    def _save(self, view: GraphView, save_as: bool) -> bool:
        ok = save_document(
            self,
            view.doc,
            self.ask_path,
            save_as,
            self.report,
            lambda notes: self.report(notes, "Saved with notes"),
        )
        if ok:
            self._mark(view)
            if view.doc.path is not None:
                self.recent_files.remember(view.doc.path)
        return ok

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

    def current_file_name(self) -> str:
        """The name of the file the current tab shows, for messages ("xocview" when none)."""
        doc = self._current_document()
        return doc.title if doc is not None else "xocview"

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

    def _tab_changed(self, _index: int) -> None:
        view = self._view()
        self.inspector.set_document(view.doc if view else None)
        self.search.set_document(view.doc if view else None)
        self.problems.set_document(view.doc if view else None)
        self.runner.set_document(view.doc if view else None)
        self.importer.set_document(view.doc if view else None)
        if view is not None:
            self.undo_group.setActiveStack(view.doc.undo_stack)
            self._mark(view)
            view.setFocus()

    def show_search(self) -> None:
        self.search_dock.show()
        self.search_dock.raise_()
        self.search.focus_query()

    # -- drag and drop, export, theme -----------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls():
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        urls = event.mimeData().urls()
        self.open_paths([Path(url.toLocalFile()) for url in urls if url.isLocalFile()])
        event.acceptProposedAction()

    def export_dialog(self, suffix: str) -> None:
        view = self._view()
        if view is None:
            return
        base = view.doc.path.with_suffix(suffix) if view.doc.path else Path(f"graph{suffix}")
        name, _ = QFileDialog.getSaveFileName(self, "Export image", str(base), f"Image (*{suffix})")
        if name:
            self.export(Path(name))

    def compare_with(self) -> None:
        """File > Compare With...: the current graph and another file side by side."""
        self.comparer.ask()

    def import_times(self) -> None:
        """File > Import Times: a profile from another runtime onto the current graph."""
        self.importer.import_dialog()

    def export(self, path: Path) -> None:
        view = self._view()
        if view is None:
            return
        try:
            render_to_file(view.doc.drawing, path, self.theme_name)
        except XocviewError as e:
            self.report(str(e), "Cannot export image")

    def set_theme(self, choice: str) -> None:
        """ "light", "dark", or "system" (follows the desktop's colour scheme as it changes)."""
        self.theme_choice = choice
        self.theme_name = _effective_theme(choice)
        apply_palette(self.theme_name)
        self.settings.setValue("theme", choice)
        for k in range(self.tabs.count()):
            view = self.tabs.widget(k)
            if isinstance(view, GraphView | CompareTab):
                view.set_theme(self.theme_name)

    # -- help, closing ----------------------------------------------------------------------

    def show_shortcuts(self) -> None:
        text = (
            "0 fit   F focus selection   + / - zoom   arrows: predecessor, successor, "
            "neighbours\nDouble-click a group (or a frame title) to expand or collapse it"
            "\nCtrl+O open   Ctrl+R reload   Ctrl+E export PNG   Ctrl+W close tab"
            "\nF5 run the graph   Shift+F5 stop   Ctrl+F find"
        )
        QMessageBox.information(self, "Keyboard shortcuts", text)

    def show_about(self) -> None:
        QMessageBox.about(
            self,
            "About xocview",
            f"xocview {__version__}\nA viewer for ONNX, NNVM/MXNet/TVM, LightNet and XOC graphs.",
        )

    def closeEvent(self, event: QCloseEvent) -> None:
        for k in range(self.tabs.count()):
            view = self.tabs.widget(k)
            if isinstance(view, GraphView) and not self._may_discard(view):
                event.ignore()
                return
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("state", self.saveState())
        self.cancel_loading()  # load threads are abandoned, never waited for
        self.runner.stop()  # a run stops at its next node instead of running to the end
        super().closeEvent(event)


def _effective_theme(choice: str) -> str:
    if choice != "system":
        return choice if choice in ("light", "dark") else "light"
    scheme = QGuiApplication.styleHints().colorScheme()
    return "dark" if scheme == Qt.ColorScheme.Dark else "light"
