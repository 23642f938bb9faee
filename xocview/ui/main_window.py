"""The main window: one tab per graph, the inspector dock, menus with standard shortcuts."""

from __future__ import annotations

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
    QMessageBox,
    QTabWidget,
    QUndoView,
)

from xocview.errors import XocviewError
from xocview.ui.actions import add_action, make_menus
from xocview.ui.canvas.box_texts import set_show_names
from xocview.ui.canvas.view import GraphView, ViewPlace
from xocview.ui.compare import Comparer, CompareTab
from xocview.ui.guard import relay
from xocview.ui.importing import ProfileImporter
from xocview.ui.load_process import warm_up
from xocview.ui.open_failures import OpenFailures
from xocview.ui.opening import OpeningWindow
from xocview.ui.palette import apply_palette
from xocview.ui.panels.inspector import Inspector
from xocview.ui.panels.problems import ProblemsPanel
from xocview.ui.panels.search import SearchPanel
from xocview.ui.recent_files import RecentFiles
from xocview.ui.render import render_to_file
from xocview.ui.running import RunController
from xocview.ui.saving import AskPath, AskUnsaved, ask_path, ask_unsaved, save_document
from xocview.ui.workers import LoadJob
from xocview.version import __version__

__all__ = ["MainWindow"]

INSPECTOR_WIDTH = 380  # pixels, at first start
BOTTOM_HEIGHT = 180  # pixels, at first start: the canvas gets most of the height


class MainWindow(OpeningWindow):
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
        self.reloading: dict[Path, tuple[ViewPlace, int]] = {}
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
        # the canvas gets the height until there is something to show below it: Problems
        # appears with a graph that has findings, Profile with a run, Undo History on demand
        problems_dock.hide()
        history.hide()
        self.problems.found.connect(lambda n: self._show_problems(problems_dock, n))
        self._make_busy_bar()
        self.menus = make_menus(self, self)
        self.recent_files = RecentFiles(self, self.settings, self.menus.recent, self.open_path)
        self.runner = RunController(
            self, self.menus.run, lambda: self.view_do("focus_selection"), self.menus.time_from
        )
        self.importer = ProfileImporter(self, self.runner, self.menus.metrics)
        self.comparer = Comparer(
            self, self.tabs, self._current_document, self.report, lambda: self.theme_name
        )
        for panel in (dock, self.search_dock, problems_dock, history, self.runner.dock):
            self.menus.panels.addAction(panel.toggleViewAction())
        self._overlay_actions()
        names = bool(self.settings.value("view/names", False, type=bool))
        set_show_names(names)  # before the first drawing is made
        self.menus.names.setChecked(names)
        # Room for values such as shapes and FLOPs notes; a saved layout overrides it.
        self.resizeDocks([dock], [INSPECTOR_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks([problems_dock], [BOTTOM_HEIGHT], Qt.Orientation.Vertical)
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("state")
        if state is not None:
            self.restoreState(state)

    def _show_problems(self, dock: QDockWidget, count: int) -> None:
        """Bring the Problems pane up when the graph shown has findings (never hidden again
        by a clean graph: the user closes it, or keeps it)."""
        if count and not dock.isVisible():
            dock.show()
            dock.raise_()

    def _overlay_actions(self) -> None:
        """View > Minimap and View > Legend: shown or hidden in every view, remembered."""
        for name, text, key in (
            ("minimap", "&Minimap", "Ctrl+Shift+M"),
            ("legend", "Le&gend", "Ctrl+Shift+G"),
        ):
            on = self.settings.value(f"view/{name}", True, type=bool)
            GraphView.set_overlay(name, bool(on))
            act = add_action(
                self,
                self.menus.view,
                text,
                lambda checked, n=name: self.set_overlay(n, bool(checked)),
                key,
                checkable=True,
            )
            act.setChecked(bool(on))

    def set_overlay(self, name: str, on: bool) -> None:
        GraphView.set_overlay(name, on)
        self.settings.setValue(f"view/{name}", on)
        for view in self.findChildren(GraphView):
            view.minimap.follow()
            view.viewport().update()

    def set_show_names(self, on: bool) -> None:
        """View > Show Names: every open graph is laid out again with (or without) a name
        line on each node box; remembered for the next window."""
        set_show_names(on)
        self.settings.setValue("view/names", on)
        for doc in {id(v.doc): v.doc for v in self.findChildren(GraphView)}.values():
            doc.relayout()

    # -- the current view ------------------------------------------------------------------

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

    # -- reloading, closing and saving tabs ----------------------------------------------------

    def reload(self) -> None:
        """Read the file again into the same tab's place, keeping the open groups, the
        selection, the zoom and the part of the graph on screen."""
        view = self._view()
        if view is not None and view.doc.path is not None:
            index = self.tabs.currentIndex()
            place = view.place()
            path = view.doc.path
            if self.close_tab(index):
                self.reloading[path] = (place, index)
                self.open_path(path)

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

    def current_file_name(self) -> str:
        """The name of the file the current tab shows, for messages ("xocview" when none)."""
        doc = self._current_document()
        return doc.title if doc is not None else "xocview"

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
