"""Every failure of a worker thread reaches the user: one line in the window naming the file.

A thread that dies of an exception prints a traceback that nobody at the window reads: a label
thread that grew to 1.6 GB on a deeply nested file died of MemoryError unseen, and the window
waited for its labels for ever. Workers catch their own failures, put their work in a usable
state and ``tell`` the window; ``threading.excepthook`` catches whatever a thread did not, and
``sys.excepthook`` a bug in a slot of the GUI thread. Both say it in the window; the traceback
of a bug (not of a lack of memory or stack) also goes to stderr, for a bug report.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import traceback
from collections.abc import Callable
from types import TracebackType

from PySide6.QtCore import QObject, Signal

from xocview.ui.failure_text import failure_message

__all__ = ["Relay", "install", "relay", "tell"]


class Relay(QObject):
    """Carries a one-line message from any thread to the window (a queued signal).

    ``unnamed`` takes a message without its file: the name of the file the window shows is
    put in front here, in the GUI thread (a worker thread must not ask the widgets)."""

    said = Signal(str)
    unnamed = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.current_file: Callable[[], str] = lambda: "xocview"
        self.unnamed.connect(self._name)

    def _name(self, text: str) -> None:
        self.said.emit(f"{self.current_file()}: {text}")


_RELAY: list[Relay] = []


def relay() -> Relay:
    """The one relay; made by the first window, in the GUI thread, where its slots run."""
    if not _RELAY:
        _RELAY.append(Relay())
    return _RELAY[0]


def tell(message: str) -> None:
    """Show ``message`` in the window, from any thread (nothing when no window listens)."""
    if _RELAY:
        with contextlib.suppress(RuntimeError):  # the application is ending
            _RELAY[0].said.emit(message)


def _is_bug(error: BaseException) -> bool:
    return not isinstance(error, MemoryError | RecursionError)


def thread_failed(args: threading.ExceptHookArgs) -> None:
    """``threading.excepthook``: a thread's uncaught exception as one line in the window."""
    error = args.exc_value
    if error is None or isinstance(error, SystemExit):
        return
    if _is_bug(error):
        traceback.print_exception(args.exc_type, error, args.exc_traceback)
    text = failure_message("", error, "finish its work in the background")[2:]
    if _RELAY:
        with contextlib.suppress(RuntimeError):
            _RELAY[0].unnamed.emit(text)


def slot_failed(
    current_file: Callable[[], str], report: Callable[[str], None], quit_app: Callable[[], None]
) -> Callable[[type[BaseException], BaseException, TracebackType | None], None]:
    """A ``sys.excepthook`` for bugs in Qt slots: one line naming the file shown
    (``current_file()``) in a box (``report``), and the window lives on; Ctrl+C in the
    terminal quits (``quit_app``)."""

    def hook(kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if isinstance(error, KeyboardInterrupt):
            quit_app()
            return
        if _is_bug(error):
            traceback.print_exception(kind, error, tb)
        report(failure_message(current_file(), error, "show it"))

    return hook


def install(
    current_file: Callable[[], str], report: Callable[[str], None], quit_app: Callable[[], None]
) -> None:
    """Route every uncaught exception, in any thread, to the window: ``current_file()`` names
    the file shown (messages start with it), ``report`` shows a slot's bug in a box."""
    relay().current_file = current_file
    sys.excepthook = slot_failed(current_file, report, quit_app)
    threading.excepthook = thread_failed
