"""Work in the background: Expand All reports progress, Cancel really stops it and undoes it."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import onnx
import pytest
from PySide6.QtCore import Qt

from tests.perf.onnx_models import transformer_like
from xocview.layout.nested import MEMO
from xocview.ui import workers
from xocview.ui.canvas.view import GraphView
from xocview.ui.progress import Cancelled, WorkProgress


def open_torch_like(qtbot: Any, window: Any, tmp_path: Path, nodes: int = 3000) -> GraphView:
    path = tmp_path / "torch_like.onnx"
    onnx.save(transformer_like(nodes), path)
    window.open_path(path)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=60000)
    view = window.tabs.currentWidget()
    assert isinstance(view, GraphView)
    qtbot.waitUntil(lambda: not view.doc.busy, timeout=60000)
    return view


class Gate:
    """Wraps the workers' build_drawing: the layout waits at its first progress report until
    the test opens the gate, and what became of it is recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.open = threading.Event()
        self.outcome: list[str] = []
        self.reports: list[tuple[int, int]] = []
        real = workers.build_drawing

        def gated(*args: Any, progress: Any = None, **kwargs: Any) -> Any:
            def hold(done: int, total: int) -> None:
                self.reports.append((done, total))
                if not self.reached.is_set():
                    self.reached.set()
                    self.open.wait(30)
                progress(done, total)

            try:
                drawing = real(*args, progress=hold, **kwargs)
            except Cancelled:
                self.outcome.append("cancelled")
                raise
            self.outcome.append("finished")
            return drawing

        monkeypatch.setattr(workers, "build_drawing", gated)


def test_expand_all_runs_in_the_background_and_cancel_stops_it(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = open_torch_like(qtbot, window, tmp_path)
    doc = view.doc
    before, expanded = doc.drawing, set(doc.expanded)
    MEMO.clear()
    gate = Gate(monkeypatch)
    window.doc_do("set_level", None)  # View > Expand All
    assert doc.busy and doc.drawing is before  # the window goes on with the old picture
    assert gate.reached.wait(30)
    qtbot.waitUntil(lambda: window._cancel.isVisible(), timeout=5000)
    assert window._progress.isVisible()
    window._cancel.click()
    gate.open.set()
    qtbot.waitUntil(lambda: gate.outcome == ["cancelled"], timeout=30000)  # the work stopped
    assert not doc.busy and doc.drawing is before and doc.expanded == expanded
    assert not window._cancel.isVisible() and not window._progress.isVisible()
    qtbot.wait(100)
    assert doc.drawing is before  # and no late result replaces the picture


def test_expand_all_reports_progress_and_opens_everything(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = open_torch_like(qtbot, window, tmp_path)
    doc = view.doc
    gate = Gate(monkeypatch)
    gate.open.set()
    shown: list[int] = []
    doc.progress.connect(lambda done, total: shown.append(total))
    window.doc_do("set_level", None)
    qtbot.waitUntil(lambda: not doc.busy, timeout=60000)
    assert gate.outcome == ["finished"]
    assert len(gate.reports) > 100 and gate.reports[-1][0] < gate.reports[-1][1]
    groups = {n.id for i, n in enumerate(doc.graph.nodes) if doc.hierarchy.is_group[i]}
    assert doc.expanded == groups and len(doc.drawing.frames) >= len(groups)
    assert shown  # at least the first report reached the window (they are throttled)


def test_progress_raises_once_cancelled_and_reports_at_most_every_50_ms() -> None:
    seen: list[tuple[int, int]] = []
    p = WorkProgress(lambda done, total: seen.append((done, total)))
    for k in range(1000):
        p(k, 1000)
    assert seen[0] == (0, 1000) and len(seen) < 10
    p.cancel()
    with pytest.raises(Cancelled):
        p(1000, 1000)
    with pytest.raises(Cancelled):
        p.check()


def test_cancel_stops_a_load_in_its_layout_and_opens_no_tab(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "torch_like.onnx"
    onnx.save(transformer_like(3000), path)
    MEMO.clear()
    gate = Gate(monkeypatch)
    window.open_path(path)
    assert gate.reached.wait(60)
    assert window._cancel.isVisible()
    window._cancel.click()
    gate.open.set()
    qtbot.waitUntil(lambda: gate.outcome == ["cancelled"], timeout=30000)
    qtbot.wait(100)
    assert window.tabs.count() == 0 and not window._cancel.isVisible()


def test_the_panels_whole_graph_facts_are_made_in_the_background(
    qtbot: Any, window: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Validation, the summary and FLOPs of a 100k-node graph take seconds: a thread makes
    them after the first paint, the panels show them when they come, and an edit makes them
    again."""
    from xocview.model import edits
    from xocview.ui import graph_facts
    from xocview.ui.commands import perform

    made: list[tuple[str, str]] = []
    for name, make in list(graph_facts.FACTS.items()):

        def recording(graph: Any, name: str = name, make: Any = make) -> object:
            made.append((name, threading.current_thread().name))
            return make(graph)

        monkeypatch.setitem(graph_facts.FACTS, name, recording)
    view = open_torch_like(qtbot, window, tmp_path, nodes=800)
    assert len(view.doc.graph.nodes) >= 1000  # big enough for the background
    qtbot.waitUntil(lambda: window.problems.summary.text().endswith("warnings"), timeout=20000)
    assert sorted(name for name, _ in made) == ["flops_at_batch_1", "summary", "validate"]
    assert all(thread == "xocview-facts" for _, thread in made)
    view.doc.clear_selection()  # the Inspector shows the graph's rows, FLOPs counted
    rows = window.inspector.tree.findItems("FLOPs", Qt.MatchFlag.MatchExactly, 0)
    assert rows and "counting" not in rows[0].text(1)
    made.clear()
    perform(view.doc, edits.set_metadata, "note", "checked")
    # the edit's facts are made again in the thread too, and the Problems pane shows them
    qtbot.waitUntil(lambda: ("validate", "xocview-facts") in made, timeout=20000)
    assert ("validate", "MainThread") not in made
    qtbot.waitUntil(lambda: window.problems.summary.text().endswith("warnings"), timeout=20000)
