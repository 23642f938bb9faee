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
