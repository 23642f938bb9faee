"""Starting the GUI: the application object, the window, the files from the command line.

Files reach a running xocview three ways: the command line of a second launch (handed over by
``single_instance``), macOS's QFileOpenEvent (Finder, the Dock), and drag and drop. Graphs
shown from Python (``show_client``) come over the same channel, or on the command line of
the window started for them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFileOpenEvent, QIcon
from PySide6.QtWidgets import QApplication

from xocview.resources import resource_path
from xocview.ui import guard
from xocview.ui.main_window import MainWindow
from xocview.ui.show_client import deliver, request_from_args
from xocview.ui.show_host import host_of
from xocview.ui.single_instance import InstanceServer, send_to_running, server_name

__all__ = [
    "FileOpenFilter",
    "attach",
    "bring_to_front",
    "guard_window",
    "open_files",
    "report_unexpected",
    "run_gui",
    "show_request",
    "start",
]


class FileOpenFilter(QObject):
    """Passes each QFileOpenEvent (how Finder opens a document) to ``on_open``."""

    def __init__(self, on_open: Callable[[Path], None], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._on_open = on_open

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FileOpen and isinstance(event, QFileOpenEvent):
            name = event.file() or event.url().toLocalFile()
            if name:
                self._on_open(Path(name))
                return True
        return super().eventFilter(watched, event)


def open_files(window: MainWindow, paths: Sequence[Path]) -> None:
    """Open each path in a new tab and bring the window to the front (un-minimised); the files
    that fail are listed together in one non-modal list."""
    window.open_paths(paths)
    bring_to_front(window)


def show_request(window: MainWindow, message: Mapping[str, object]) -> None:
    """Carry out a ``show`` or ``compare`` request of ``show_client`` and bring the window to
    the front."""
    host_of(window).handle(message)
    bring_to_front(window)


def bring_to_front(window: MainWindow) -> None:
    state = window.windowState() & ~Qt.WindowState.WindowMinimized
    window.setWindowState(state | Qt.WindowState.WindowActive)
    window.show()
    window.raise_()
    window.activateWindow()


def attach(window: MainWindow, app: QApplication, name: str) -> InstanceServer:
    """Let later launches (over ``name``) and the OS's file-open events reach ``window``."""
    server = InstanceServer(
        name,
        lambda paths: open_files(window, paths),
        window,
        on_request=lambda message: show_request(window, message),
    )
    server.listen()  # when another instance serves the name, this window stays on its own
    app.installEventFilter(FileOpenFilter(lambda path: open_files(window, [path]), window))
    return server


def report_unexpected(
    window: MainWindow,
) -> Callable[[type[BaseException], BaseException, TracebackType | None], None]:
    """A ``sys.excepthook`` for bugs in Qt slots: one line naming the file shown, in a box of
    the window (a bug's traceback goes to stderr only, for a bug report); the window lives on."""
    return guard.slot_failed(window.current_file_name, window.report_internal, QApplication.quit)


def guard_window(window: MainWindow) -> None:
    """Every uncaught exception of the GUI thread and of any worker thread to ``window``."""
    guard.install(window.current_file_name, window.report_internal, QApplication.quit)


def start(
    app: QApplication,
    files: Sequence[str],
    new_window: bool = False,
    request: Mapping[str, object] | None = None,
) -> MainWindow | None:
    """Hand ``files`` (or ``request``, a ``show_client`` request for them) to the running
    xocview (None), or open a window that takes them."""
    paths = [Path(f).absolute() for f in files]
    name = server_name()
    if not new_window:
        sent = deliver(name, request) if request is not None else send_to_running(name, paths)
        if sent:
            return None
    window = MainWindow()
    guard_window(window)
    attach(window, app, name)
    window.show()
    if request is not None:
        show_request(window, request)
    else:
        open_files(window, paths)
    return window


def run_gui(
    files: Sequence[str],
    new_window: bool = False,
    *,
    show_name: str | None = None,
    watch: bool = False,
    colour: str | None = None,
    compare: bool = False,
) -> int:
    """Open ``files`` (each in its own tab) in this or the running xocview; run until closed.

    ``show_name``, ``watch``, ``colour`` and ``compare`` (the hidden options of ``xocview
    open`` that ``show_client`` starts a window with) make it a show request instead."""
    request = request_from_args(
        [Path(f).absolute() for f in files], show_name, watch, colour, compare
    )
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("xocview")
    app.setOrganizationName("xocview")
    app.setDesktopFileName("xocview")  # Wayland/X11: the window belongs to xocview.desktop
    app.setWindowIcon(QIcon(str(resource_path("xocview.svg"))))
    return 0 if start(app, files, new_window, request) is None else int(app.exec())
