"""The window's half of ``xocview.show``: named tabs that a later show replaces in place,
files watched for changes, and comparisons, as ``show_client`` asks for them.

A tab shown under a name is replaced by the next show of that name, keeping the user's place
(open groups that still exist, zoom, centre), as File > Reload does. A watched file is read
again ~300 ms after its last change (editors write a file in steps, or replace it, which makes
the watcher forget it: it is watched again then); a file that fails to read meanwhile leaves
the old graph in the tab and says why in the status bar.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QFileSystemWatcher, QObject, QTimer

from xocview.model import Graph
from xocview.model.analyses.metrics import METRIC_MODE, metric_names
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.view import GraphView
from xocview.ui.compare import CompareTab
from xocview.ui.document import Document
from xocview.ui.main_window import MainWindow
from xocview.ui.show_client import is_temp, remove_temp
from xocview.ui.workers import LoadJob

__all__ = ["DEBOUNCE_MS", "ShowHost", "host_of"]

DEBOUNCE_MS = 300  # a watched file is read again this long after its last change
_GONE_TRIES = 10  # debounce turns to wait for a replaced file to come back


def host_of(window: MainWindow) -> ShowHost:
    """The window's ShowHost, made on first use."""
    host = window.findChild(ShowHost)
    return host if isinstance(host, ShowHost) else ShowHost(window)


class ShowHost(QObject):
    """Carries out ``show`` and ``compare`` requests in ``window``; ``messages`` keeps what
    the status bar said of watched files that failed to read."""

    def __init__(self, window: MainWindow) -> None:
        super().__init__(window)
        self.window = window
        self.named: dict[str, GraphView] = {}  # the tab shown under each name
        self.compared: dict[str, CompareTab] = {}
        self.watched: dict[Path, str] = {}  # watched file -> the name of its tab
        self.messages: list[str] = []
        self._loading: dict[str, LoadJob] = {}  # the newest read of each name
        self._temps: set[Path] = set()  # temp files not read yet: deleted at exit
        self._changed: dict[Path, int] = {}  # watched files changed: turns waited for them
        self._watcher = QFileSystemWatcher(self)
        self._watcher.fileChanged.connect(self._file_changed)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(DEBOUNCE_MS)
        self._timer.timeout.connect(self._reload_changed)
        self._waiting_compare: dict[str, str] = {}  # new side's file -> the comparison's name
        window.comparer.opened.connect(self._compare_opened)
        app = QCoreApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.drop_temps)

    def handle(self, message: Mapping[str, object]) -> None:
        """One request of ``show_client``; a malformed one is ignored (it has been answered)."""
        show, compare = message.get("show"), message.get("compare")
        if isinstance(show, Mapping) and isinstance(show.get("path"), str):
            path = Path(str(show["path"]))
            name = show.get("name")
            colour = show.get("colour")
            self.show(
                path,
                name if isinstance(name, str) and name else path.stem,
                bool(show.get("watch", False)),
                colour if isinstance(colour, str) else None,
            )
        elif isinstance(compare, Mapping):
            a, b, name = compare.get("a"), compare.get("b"), compare.get("name")
            if isinstance(a, str) and isinstance(b, str):
                self.compare(Path(a), Path(b), name if isinstance(name, str) else "")

    # -- show ----------------------------------------------------------------------------------

    def show(self, path: Path, name: str, watch: bool, colour: str | None) -> LoadJob:
        """Read ``path`` into the tab called ``name`` (replacing it) or a new one."""
        if is_temp(path):
            self._temps.add(path)
            watch = False  # nobody writes it again
        if watch:
            self._watch(path, name)
        return self._load(path, name, colour, quiet=False)

    def _load(self, path: Path, name: str, colour: str | None, quiet: bool) -> LoadJob:
        old = self._loading.pop(name, None)
        if old is not None:
            old.cancel()  # a newer show of the same name wins
        job = LoadJob(path)
        job.signals.done.connect(partial(self._loaded, name, colour))
        job.signals.failed.connect(partial(self._failed, name, quiet))
        self._loading[name] = job
        job.start()
        return job

    def _loaded(
        self,
        name: str,
        colour: str | None,
        job: LoadJob,
        graph: Graph,
        drawing: Drawing,
        expanded: set[str],
        fmt: str,
        facts: dict[str, object],
    ) -> None:
        self._done(name, job)
        if job.cancelled:
            return
        w = self.window
        old = self.view_named(name)
        previous = old.doc.colour_by if old is not None else None
        place, index = (old.place(), w.tabs.indexOf(old)) if old is not None else (None, -1)
        if old is not None and not w.close_tab(index):
            place = None  # the user kept the old tab's unsaved edits: a new tab beside it
        path = None if is_temp(job.path) else job.path
        view = w.add_document(graph, path, drawing, expanded, fmt, facts)
        if place is not None:
            w.tabs.tabBar().moveTab(w.tabs.indexOf(view), min(index, w.tabs.count() - 1))
            view.restore(place)
        self.named[name] = view
        view.destroyed.connect(partial(self._forget, name, id(view)))
        self._colour(view.doc, colour, previous)

    def _failed(self, name: str, quiet: bool, job: LoadJob, message: str) -> None:
        self._done(name, job)
        if job.cancelled:
            return
        if quiet and self.view_named(name) is not None:  # a watched file half written
            self.messages.append(message)
            self.window.statusBar().showMessage(message)
            return
        self.window.errors.append(message)
        self.window.open_failures.add(message)

    def _done(self, name: str, job: LoadJob) -> None:
        if self._loading.get(name) is job:
            del self._loading[name]
        if job.path in self._temps:
            self._temps.discard(job.path)
            remove_temp(job.path)  # read: the tab holds the graph, Save asks where

    def view_named(self, name: str) -> GraphView | None:
        """The tab shown under ``name``, while it is open."""
        view = self.named.get(name)
        return view if view is not None and self.window.tabs.indexOf(view) >= 0 else None

    def _forget(self, name: str, view_id: int, _obj: object = None) -> None:
        """A named tab was closed (not replaced): its name is free, its file unwatched."""
        if id(self.named.get(name)) != view_id:
            return
        del self.named[name]
        for path in [p for p, n in self.watched.items() if n == name]:
            del self.watched[path]
            self._watcher.removePath(str(path))

    def _colour(self, doc: Document, colour: str | None, previous: str | None) -> None:
        """Colour as the request says (``time:<engine>`` or ``metric:<name>``, chosen as a
        profile import chooses), else as the replaced tab did where the new graph allows."""
        mode = colour or previous
        runner = self.window.runner
        if mode is None:
            return
        if mode.startswith("time"):
            sources = doc.time_sources()
            engine = mode.partition(":")[2]
            if not sources:
                return
            engine = engine if engine in sources else doc.shown_time_engine()
            if runner.doc is doc:
                runner.show_times_of(engine)  # View > Time From and the colour menu follow
            else:
                doc.set_time_engine(engine)
                doc.set_colour_by("time")
        elif mode in runner.colour_actions and runner.doc is doc:
            runner.colour_by(mode)
        elif mode.startswith(METRIC_MODE):
            if mode[len(METRIC_MODE) :] in metric_names(doc.graph):
                doc.set_colour_by(mode)
        elif mode in ("flops", "params", "category"):
            doc.set_colour_by(mode)

    # -- watch ---------------------------------------------------------------------------------

    def _watch(self, path: Path, name: str) -> None:
        for other in [p for p, n in self.watched.items() if n == name and p != path]:
            del self.watched[other]
            self._watcher.removePath(str(other))
        self.watched[path] = name
        if str(path) not in self._watcher.files():
            self._watcher.addPath(str(path))

    def _file_changed(self, name: str) -> None:
        path = Path(name)
        if path in self.watched:
            self._changed[path] = 0
            self._timer.start()  # again: the read waits for the last of a burst of writes

    def _reload_changed(self) -> None:
        """Read each changed file again; a replaced file is watched again once it is back."""
        for path, turns in list(self._changed.items()):
            name = self.watched.get(path)
            if name is None or self.view_named(name) is None:
                del self._changed[path]
                continue
            if not path.exists():
                self._changed[path] = turns + 1
                if turns + 1 >= _GONE_TRIES:
                    del self._changed[path]
                    self.window.statusBar().showMessage(f"{path.name} was removed")
                continue
            del self._changed[path]
            if str(path) not in self._watcher.files():
                self._watcher.addPath(str(path))
            self._load(path, name, None, quiet=True)
        if self._changed:
            self._timer.start()

    # -- compare -------------------------------------------------------------------------------

    def compare(self, a: Path, b: Path, name: str) -> LoadJob:
        """Open the comparison of ``a`` and ``b`` in a tab (replacing the one called
        ``name``); ``a`` is read here, then the window's Comparer reads ``b`` and compares."""
        for path in (a, b):
            if is_temp(path):
                self._temps.add(path)
        job = LoadJob(a)

        def loaded(
            _job: LoadJob, graph: Graph, d: Drawing, e: set[str], fmt: str, _f: object
        ) -> None:
            self._drop(a)
            old = Document(graph, None if is_temp(a) else a, fmt, drawing=d, expanded=e)
            self._waiting_compare[str(b)] = name
            started = self.window.comparer.compare(b, old)
            if started is not None:
                started.signals.done.connect(lambda *_: self._drop(b))
                started.signals.failed.connect(lambda *_: self._drop(b))

        def failed(_job: LoadJob, message: str) -> None:
            self._drop(a)
            self._drop(b)
            self.window.report(message, "Cannot compare")

        job.signals.done.connect(loaded)
        job.signals.failed.connect(failed)
        job.start()
        return job

    def _drop(self, path: Path) -> None:
        if path in self._temps:
            self._temps.discard(path)
            remove_temp(path)

    def _compare_opened(self, tab: CompareTab) -> None:
        """A comparison asked for by name: it takes the place of the one of that name."""
        tabs = self.window.tabs
        new_file = tabs.tabToolTip(tabs.indexOf(tab)).rsplit("\n", 1)[-1]
        name = self._waiting_compare.pop(new_file, None)
        if name is None:
            return  # File > Compare With...
        old = self.compared.get(name)
        at = tabs.indexOf(old) if old is not None else -1
        if old is not None and at >= 0:
            tabs.removeTab(at)
            old.deleteLater()
            tabs.tabBar().moveTab(tabs.indexOf(tab), min(at, tabs.count() - 1))
            tabs.setCurrentWidget(tab)
        self.compared[name] = tab

    def drop_temps(self, _obj: object = None) -> None:
        """Delete the temp files not read yet (the window is closing)."""
        for path in list(self._temps):
            remove_temp(path)
        self._temps.clear()
