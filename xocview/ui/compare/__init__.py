"""File > Compare With...: the current graph against another file, side by side in a tab.

The other file loads in the background like any file; the comparison (``diff_graphs``) runs in
a thread of its own, since it takes a second or two on a 100k-node graph; the tab opens when
both are done. The old side is a snapshot of the current tab's graph, edits included.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QTabWidget, QWidget

from xocview.formats import registry
from xocview.model import Graph
from xocview.model.analyses.diff import GraphDiff, diff_graphs
from xocview.ui.canvas.drawing import Drawing
from xocview.ui.compare.tab import CompareTab
from xocview.ui.document import Document
from xocview.ui.failure_text import failure_message
from xocview.ui.workers import LoadJob

__all__ = ["CompareTab", "Comparer"]

FILE_FILTER = registry.file_filter()  # every format of the registry, by its extensions


class _Compared(QObject):
    done = Signal(object)  # the GraphDiff, from the comparing thread
    failed = Signal(str)


class Comparer(QObject):
    """Opens comparisons as tabs of ``tabs``; ``current`` is the document of the current tab
    (None when it is not a graph), ``report`` shows a message, ``theme`` the theme's name."""

    opened = Signal(object)  # the CompareTab, once it is in its tab

    def __init__(
        self,
        parent: QWidget,
        tabs: QTabWidget,
        current: Callable[[], Document | None],
        report: Callable[[str, str], None],
        theme: Callable[[], str],
    ) -> None:
        super().__init__(parent)
        self.parent_widget = parent
        self.tabs, self.current, self.report, self.theme = tabs, current, report, theme
        self.jobs: list[LoadJob] = []

    def ask(self) -> None:
        """Ask for the file to compare the current graph with."""
        doc = self.current()
        if doc is None:
            self.report("Open a graph first: it is compared with the file you pick.", "Compare")
            return
        start = str(doc.path.parent) if doc.path else str(Path.home())
        name, _ = QFileDialog.getOpenFileName(
            self.parent_widget, f"Compare {doc.title} with", start, FILE_FILTER
        )
        if name:
            self.compare(Path(name))

    def compare(self, path: Path, old: Document | None = None) -> LoadJob | None:
        """Load ``path`` and compare ``old`` (default: the current tab's graph) with it."""
        old = old if old is not None else self.current()
        if old is None:
            self.report("Open a graph first: it is compared with the file you pick.", "Compare")
            return None
        before = old.graph.snapshot()
        drawing, expanded, path_old, fmt_old = old.drawing, set(old.expanded), old.path, old.format
        job = LoadJob(path)

        def loaded(
            _job: LoadJob, graph: Graph, d: Drawing, e: set[str], fmt: str, _f: object
        ) -> None:
            self.jobs.remove(job)

            def documents(diff: GraphDiff) -> None:
                new = Document(graph, path, fmt, drawing=d, expanded=e)
                self._open(Document(before, path_old, fmt_old, drawing, expanded), new, diff)

            self._diff_in_thread(before, graph, path.name, documents)

        def failed(_job: LoadJob, message: str) -> None:
            self.jobs.remove(job)
            self.report(message, "Cannot compare")

        job.signals.done.connect(loaded)
        job.signals.failed.connect(failed)
        self.jobs.append(job)
        job.start()
        return job

    def _swap(self, tab: CompareTab) -> None:
        """The same two graphs compared the other way round, in the swapped tab's place."""
        old, new = tab.left.doc, tab.right.doc
        tab.swap_button.setEnabled(False)  # one swap at a time

        def documents(diff: GraphDiff) -> None:
            at = self.tabs.indexOf(tab)
            if at < 0:  # closed while the differences were computed
                return
            self.tabs.removeTab(at)
            tab.deleteLater()
            left, right = (
                Document(d.graph, d.path, d.format, drawing=d.drawing, expanded=set(d.expanded))
                for d in (new, old)
            )
            self._open(left, right, diff, at, (tab.names[1], tab.names[0]))

        self._diff_in_thread(new.graph, old.graph, tab.title, documents)

    def _diff_in_thread(
        self, before: Graph, after: Graph, name: str, then: Callable[[GraphDiff], None]
    ) -> None:
        """``diff_graphs(before, after)`` in a thread; ``then(diff)`` here when it is done.
        Nothing else reads the two graphs meanwhile: their documents are made afterwards."""
        relay = _Compared(self)
        relay.done.connect(then)
        relay.failed.connect(lambda message: self.report(message, "Cannot compare"))

        def work() -> None:
            try:
                relay.done.emit(diff_graphs(before, after))
            except Exception as e:  # a bug of ours: said, never a dead thread
                relay.failed.emit(failure_message(name, e, "compare them"))

        threading.Thread(target=work, name="xocview-compare", daemon=True).start()

    def _open(
        self,
        old: Document,
        new: Document,
        diff: GraphDiff,
        at: int | None = None,
        names: tuple[str, str] | None = None,
    ) -> CompareTab:
        """The comparison's tab, added (or put at ``at``, where a swapped one was, with the
        swapped one's ``names`` the other way round)."""
        tab = CompareTab(old, new, diff, self.tabs, self.theme(), names)
        tab.swap_requested.connect(lambda: self._swap(tab))
        if at is None:
            index = self.tabs.addTab(tab, tab.title)
        else:
            index = self.tabs.insertTab(at, tab, tab.title)
        self.tabs.setTabToolTip(index, f"{old.path or old.title}\n{new.path or new.title}")
        self.tabs.setCurrentIndex(index)
        tab.first_view()
        self.opened.emit(tab)
        return tab
