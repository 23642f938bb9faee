"""Progress and Cancel for work in worker threads: the worker calls in, the window reads out.

A layout calls ``WorkProgress(done, total)`` as it goes (``nested_layout``'s ``progress``); a
cancelled one raises ``Cancelled`` there, so Cancel really stops the work instead of leaving
a thread to finish for nothing. Reports are throttled: a signal per group of a 2,000-group
Expand All would flood the window's event queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

__all__ = ["Cancelled", "WorkProgress"]

_EVERY = 0.05  # seconds between two reports


class Cancelled(Exception):
    """The user cancelled the work; nothing is wrong."""


class WorkProgress:
    """A cancel flag (set from any thread) and a throttled ``report(done, total)``."""

    def __init__(self, report: Callable[[int, int], None] | None = None) -> None:
        self._report = report
        self._cancelled = threading.Event()
        self._last = 0.0

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def check(self) -> None:
        """Raise Cancelled once the work was cancelled: call between steps of the work."""
        if self._cancelled.is_set():
            raise Cancelled

    def __call__(self, done: int, total: int) -> None:
        self.check()
        now = time.monotonic()
        if self._report is not None and now - self._last >= _EVERY:
            self._last = now
            self._report(done, total)
