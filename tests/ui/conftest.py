"""Qt tests run offscreen with their own settings file, never the user's."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture
def window(qtbot, tmp_path: Path):  # type: ignore[no-untyped-def]
    from PySide6.QtCore import QSettings

    from xocview.ui.main_window import MainWindow

    settings = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    w = MainWindow(settings)
    w.ask_unsaved = lambda parent, doc: "discard"  # no modal dialogs in tests
    w.ask_path = lambda parent, doc: None
    w.resize(1200, 800)
    qtbot.addWidget(w)
    w.show()
    return w
