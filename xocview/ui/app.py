"""Starting the GUI: the application object, the window, the files from the command line."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from xocview.resources import resource_path
from xocview.ui.main_window import MainWindow

__all__ = ["run_gui"]


def run_gui(files: Sequence[str]) -> int:
    """Open a window with ``files`` (each in its own tab) and run until it closes."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("xocview")
    app.setOrganizationName("xocview")
    app.setWindowIcon(QIcon(str(resource_path("xocview.svg"))))
    window = MainWindow()
    window.show()
    for name in files:
        window.open_path(Path(name))
    return int(app.exec())
