"""Issue 30: View > Show Names (Netron's) draws each node's name on its box, under its op
type; boxes grow to hold the line, the toggle lays the graph out again, and the choice is
remembered by the next window."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QSettings

from xocview.formats import save
from xocview.model import Graph, Node, Tensor
from xocview.ui.canvas.box_texts import ROW_H, SHOW_NAMES, set_show_names
from xocview.ui.canvas.drawing import KIND_NODE
from xocview.ui.main_window import MainWindow

LONG = "encoder/layer_3/attention/out_proj_matmul"


@pytest.fixture(autouse=True)
def _names_off():  # type: ignore[no-untyped-def]
    yield
    set_show_names(False)


def named_graph(path: Path) -> Path:
    tensors = [
        Tensor("x", "input", [1, 4], "float32"),
        Tensor("w", "weight", [4, 4], "float32"),
        Tensor("a", "activation", [1, 4], "float32"),
        Tensor("y", "output", [1, 4], "float32"),
    ]
    nodes = [Node(LONG, "MatMul", [0, 1], [2]), Node("act", "Relu", [2], [3])]
    save(Graph("g", "g", tensors, nodes, [0], [3]), path)
    return path


def window_with(qtbot, settings: QSettings, path: Path) -> MainWindow:  # type: ignore[no-untyped-def]
    w = MainWindow(settings)
    w.resize(1000, 700)
    qtbot.addWidget(w)
    w.show()
    w.open_path(path)
    qtbot.waitUntil(lambda: w.tabs.count() == 1, timeout=20000)
    return w


def show_names_action(w: MainWindow):  # type: ignore[no-untyped-def]
    return next(a for a in w.menus.view.actions() if a.text() == "Show &Names")


def boxes(w: MainWindow) -> dict[str, tuple[float, float, tuple[str, ...]]]:
    d = w.tabs.currentWidget().doc.drawing
    return {
        d.keys[k]: (float(d.w[k]), float(d.h[k]), d.rows[k])
        for k in np.flatnonzero(d.kind == KIND_NODE).tolist()
    }


def test_show_names_puts_each_name_on_its_box_and_is_remembered(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    path = named_graph(tmp_path / "g.json")
    w = window_with(qtbot, settings, path)
    action = show_names_action(w)
    assert not action.isChecked() and not SHOW_NAMES["on"]
    before = boxes(w)
    assert before[LONG][2] == ("B 4x4",) and before["act"][2] == ()  # the weight only
    doc = w.tabs.currentWidget().doc
    drawing = doc.drawing

    action.trigger()
    qtbot.waitUntil(lambda: doc.drawing is not drawing, timeout=10000)
    after = boxes(w)
    for key, (_, height, rows) in after.items():
        assert rows[0] == key  # the name first, then the weights the box held before
        assert rows[1:] == before[key][2]
        grown = ROW_H if before[key][2] else ROW_H + 4.0
        assert height == pytest.approx(before[key][1] + grown)
    assert after[LONG][0] > before[LONG][0]  # the long name widens its box
    assert after[LONG][0] >= len(LONG) * 6.0
    assert settings.value("view/names", type=bool) is True
    w.close()

    again = window_with(qtbot, settings, path)  # the next window shows names at once
    assert show_names_action(again).isChecked()
    assert all(rows[0] == key for key, (_, _, rows) in boxes(again).items())
    show_names_action(again).trigger()  # and off again: the boxes as they were
    qtbot.waitUntil(lambda: boxes(again) == before, timeout=10000)
    assert settings.value("view/names", type=bool) is False
