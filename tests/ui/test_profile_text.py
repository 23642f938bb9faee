"""The Profile dock as a user reads it: times in milliseconds with thousands separators, never
an exponent and never clipped; and a first launch that leaves the canvas most of the window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QDockWidget

from tests.ui.test_viewer import open_file
from xocview.executor import RunResult
from xocview.formats import save
from xocview.model import Graph, Node, Tensor
from xocview.ui.main_window import MainWindow
from xocview.ui.panels.profile import format_ms


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (2514.0, "2,514 ms"),
        (1234567.8, "1,234,568 ms"),
        (123.4, "123 ms"),
        (99.96, "100 ms"),
        (12.5, "12.5 ms"),
        (2.514, "2.51 ms"),
        (0.5, "0.500 ms"),
        (0.031, "0.031 ms"),
        (0.00123, "0.0012 ms"),
        (0.0, "0 ms"),
        (float("nan"), "-"),
    ],
)
def test_times_read_as_milliseconds(ms: float, text: str) -> None:
    assert format_ms(ms) == text


def timed_graph(path: Path) -> Path:
    """x -> Conv (2514 ms) -> Relu (0.031 ms) -> y, with the times the file stores."""

    def timed(ms: float) -> dict[str, object]:
        return {"performance": {"time": {"cpu": ms}}}

    tensors = [
        Tensor("x", "input", [1, 8], "float32"),
        Tensor("a", "activation", [1, 8], "float32"),
        Tensor("y", "output", [1, 8], "float32"),
    ]
    nodes = [
        Node("conv", "Conv", [0], [1], None, timed(2514.0)),
        Node("relu", "Relu", [1], [2], None, timed(0.031)),
    ]
    save(Graph("g", "g", tensors, nodes, [0], [2]), path)
    return path


def test_the_profile_dock_shows_readable_unclipped_times(qtbot, window, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    view = open_file(qtbot, window, timed_graph(tmp_path / "timed.json"))
    view.doc.last_run = RunResult(total_time=2.5141, peak_bytes=3 * 2**20)
    panel = window.runner.profile
    window.runner.dock.show()
    window.runner.dock.raise_()
    panel.refresh()
    qtbot.wait(50)
    summary = panel.summary.text()
    assert "Total 2,514 ms over 2 timed nodes" in summary
    assert "one pass 2,514 ms" in summary and "e+" not in summary
    # the slowest nodes: whole cells, nothing cut
    assert panel.nodes.horizontalHeaderItem(2).text() == "time"
    cells = [(panel.nodes.item(r, 0).text(), panel.nodes.item(r, 2).text()) for r in range(2)]
    assert cells == [("conv", "2,514 ms"), ("relu", "0.031 ms")]
    metrics = panel.nodes.fontMetrics()
    for row in range(2):
        text = panel.nodes.item(row, 2).text()
        assert panel.nodes.columnWidth(2) >= metrics.horizontalAdvance(text)
    # the bars per op type: the value column holds the widest time
    bars = panel.bars
    assert bars.value_texts() == ["2,514 ms", "0.031 ms"]
    widest = max(bars.fontMetrics().horizontalAdvance(t) for t in bars.value_texts())
    assert bars.value_width() > widest


def test_the_first_launch_gives_the_canvas_most_of_the_height(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    # nothing below the canvas yet: Problems, Undo History and Profile wait for their cause
    for name in ("problems", "history", "profile"):
        assert not w.findChild(QDockWidget, name).isVisible(), name
    assert w.tabs.height() > 0.85 * w.height()
    w.findChild(QDockWidget, "problems").show()  # View > Panels > Problems
    qtbot.waitUntil(lambda: w.tabs.height() < 0.85 * w.height())
    assert w.findChild(QDockWidget, "problems").height() < 0.25 * w.height()


def test_a_saved_layout_wins_over_the_first_launch_one(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = QSettings(str(tmp_path / "saved.ini"), QSettings.Format.IniFormat)
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.show()
    qtbot.waitExposed(first)
    bottom = first.findChild(QDockWidget, "problems")
    bottom.show()  # as View > Panels > Problems does
    first.resizeDocks([bottom], [400], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: bottom.height() > 300)
    saved = bottom.height()
    first.close()  # saves the layout
    second = MainWindow(settings)
    qtbot.addWidget(second)
    second.show()
    qtbot.waitExposed(second)
    assert second.findChild(QDockWidget, "problems").height() == saved
