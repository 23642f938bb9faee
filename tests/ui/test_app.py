"""The application takes documents from the OS: QFileOpenEvent is how Finder opens a file."""

from __future__ import annotations

import uuid

from PySide6.QtCore import QUrl
from PySide6.QtGui import QFileOpenEvent
from PySide6.QtWidgets import QApplication

from tests.conftest import REPO
from xocview.ui.app import attach

TINY = REPO / "sample_graphs" / "tiny_transformer.json"
SIMPLE = REPO / "sample_graphs" / "simple_model.json"


def test_a_file_open_event_opens_a_tab(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    app = QApplication.instance()
    attach(window, app, f"xocview-test-{uuid.uuid4().hex[:12]}")
    window.showMinimized()

    handled = QApplication.sendEvent(app, QFileOpenEvent(str(TINY)))

    assert handled
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    assert window.tabs.tabToolTip(0) == str(TINY)
    assert not window.isMinimized()


def test_a_posted_url_event_opens_a_tab(qtbot, window) -> None:  # type: ignore[no-untyped-def]
    app = QApplication.instance()
    attach(window, app, f"xocview-test-{uuid.uuid4().hex[:12]}")

    QApplication.postEvent(app, QFileOpenEvent(QUrl.fromLocalFile(str(SIMPLE))))

    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    assert window.tabs.tabToolTip(0) == str(SIMPLE)


def test_a_file_open_already_comes_to_the_front_instead_of_a_second_tab(  # type: ignore[no-untyped-def]
    qtbot, window, tmp_path
) -> None:
    window.open_path(TINY)
    qtbot.waitUntil(lambda: window.tabs.count() == 1, timeout=30000)
    window.open_path(SIMPLE)
    qtbot.waitUntil(lambda: window.tabs.count() == 2, timeout=30000)
    assert window.tabs.currentIndex() == 1
    # the same file again, by another spelling: a link beside it and a relative-looking path
    link = tmp_path / "same.json"
    link.symlink_to(TINY)
    for again in (TINY, link, TINY.parent / ".." / TINY.parent.name / TINY.name):
        window.tabs.setCurrentIndex(1)
        job = window.open_path(again)
        assert job.cancelled and window.tabs.count() == 2
        assert window.tabs.currentIndex() == 0
    assert "is open already" in window.statusBar().currentMessage()
    # two opens before either load ends still give one tab
    window.close_tab(0)
    window.open_paths([TINY, TINY])
    qtbot.waitUntil(lambda: not window.jobs, timeout=30000)
    assert window.tabs.count() == 2
    assert sorted(window.tabs.tabToolTip(i) for i in range(2)) == sorted([str(TINY), str(SIMPLE)])
