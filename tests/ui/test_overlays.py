"""View > Minimap and View > Legend: the floating overlays can be hidden, in every view, and
the choice is remembered by the next window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from tests.conftest import REPO
from xocview.ui.canvas.view import GraphView
from xocview.ui.main_window import MainWindow

TIMED = REPO / "sample_graphs" / "tiny_transformer.json"  # stores times: a heat legend shows


@pytest.fixture(autouse=True)
def _restore_overlays():  # type: ignore[no-untyped-def]
    yield
    GraphView.overlays.update(minimap=True, legend=True)


def _window(qtbot, settings: QSettings) -> MainWindow:  # type: ignore[no-untyped-def]
    w = MainWindow(settings)
    w.resize(1200, 800)
    qtbot.addWidget(w)
    w.show()
    qtbot.waitExposed(w)
    w.open_path(TIMED)
    qtbot.waitUntil(lambda: w.tabs.count() == 1, timeout=30000)
    return w


def _toggle(window: MainWindow, text: str):  # type: ignore[no-untyped-def]
    return next(a for a in window.menus.view.actions() if a.text() == text)


def test_minimap_and_legend_hide_and_the_choice_is_remembered(qtbot, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    w = _window(qtbot, settings)
    view = w.tabs.currentWidget()
    view.zoom_to(1.0)
    qtbot.waitUntil(lambda: view.minimap.isVisible(), timeout=5000)
    legend_on = view.viewport().grab().toImage()
    minimap, legend = _toggle(w, "&Minimap"), _toggle(w, "Le&gend")
    assert minimap.isChecked() and legend.isChecked()
    minimap.trigger()
    assert not view.minimap.isVisible()
    legend.trigger()
    qtbot.waitUntil(lambda: view.viewport().grab().toImage() != legend_on, timeout=5000)
    w.close()

    again = _window(qtbot, settings)  # a new window reads the choice
    assert not _toggle(again, "&Minimap").isChecked()
    assert not _toggle(again, "Le&gend").isChecked()
    second = again.tabs.currentWidget()
    second.zoom_to(1.0)
    qtbot.wait(100)
    assert not second.minimap.isVisible()
    _toggle(again, "&Minimap").trigger()
    qtbot.waitUntil(lambda: second.minimap.isVisible(), timeout=5000)
