"""Shape labels placed in a worker thread, so that the first close-up of a big drawing does
not freeze the window while every label is weighed against its neighbours.

A placement that fails (a deeply nested file took 1.6 GB and died of MemoryError) leaves the
drawing without labels, usable, and the window is told (``guard.tell``) instead of waiting for
them for ever."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from xocview.ui.canvas.drawing import Drawing
from xocview.ui.canvas.labels import Stopped
from xocview.ui.canvas.painter import labels_placed, no_labels, placed_labels
from xocview.ui.canvas.style import Style
from xocview.ui.failure_text import failure_message
from xocview.ui.guard import tell

__all__ = ["LabelPlacer"]


class LabelPlacer(QObject):
    """Places a drawing's labels once, off the GUI thread; ``ready`` when they are.

    The placement lands in the drawing's paint cache, where the painter finds it. Qt's font
    metrics may be used outside the GUI thread; nothing else here touches Qt.
    """

    ready = Signal()

    def __init__(
        self, parent: QObject | None = None, name: Callable[[], str] = lambda: "the graph"
    ) -> None:
        super().__init__(parent)
        self._name = name  # the file shown, for messages
        self._busy: set[int] = set()  # id() of the drawings being placed
        self._lock = threading.Lock()
        self._shown = 0  # id() of the drawing on screen: placements for others stop

    def show(self, d: Drawing) -> None:
        """``d`` is the drawing on screen now: a placement for another one stops."""
        self._shown = id(d)

    @property
    def idle(self) -> bool:
        """No placement under way."""
        with self._lock:
            return not self._busy

    def pause(self) -> None:
        """No drawing is waited for: a placement under way stops (``request`` starts anew)."""
        self._shown = 0

    def request(self, d: Drawing, style: Style) -> None:
        self._shown = id(d)
        if labels_placed(d, style):  # placed, or given up on (no_labels)
            return
        with self._lock:
            if id(d) in self._busy:
                return
            self._busy.add(id(d))
        threading.Thread(
            target=self._place, args=(d, style), name="xocview-labels", daemon=True
        ).start()

    def _place(self, d: Drawing, style: Style) -> None:
        try:
            placed_labels(d, style, lambda: self._shown != id(d))
        except Stopped:
            return  # the drawing was replaced: nobody waits for its labels
        except Exception as e:  # no memory left, or a bug: the drawing goes on without labels
            no_labels(d, style)
            text = failure_message(self._name(), e, "place its shape labels")
            tell(f"{text}; the drawing is shown without them")
        finally:
            with self._lock:
                self._busy.discard(id(d))
        with contextlib.suppress(RuntimeError):  # the view closed meanwhile: nobody to tell
            self.ready.emit()
