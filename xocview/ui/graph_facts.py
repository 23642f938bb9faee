"""The whole-graph facts the panels show (summary, FLOPs, validation), by name, so that a
Document can make a big graph's in a thread and keep them until an edit."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from xocview.model import Graph
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.model.analyses.summary import summarize
from xocview.model.validate import validate
from xocview.ui.failure_text import failure_message
from xocview.ui.guard import tell

__all__ = ["FACTS", "UNMADE", "EditFacts", "make_in_thread"]

_DOING = {"summary": "summarise it", "flops_at_batch_1": "count its FLOPs", "validate": "check it"}
# In place of a fact whose making ran out of memory or stack: not to be made again, in the GUI
# thread, where the same failure would freeze or end the window.
UNMADE = object()

FACTS: dict[str, Callable[[Graph], object]] = {
    "summary": summarize,
    "flops_at_batch_1": lambda g: graph_flops_assuming(g, 1),
    "validate": validate,
}


def make_in_thread(
    graph: Graph, names: list[str], done: Callable[[dict[str, object]], None], file: str = ""
) -> None:
    """Make the facts ``names`` of ``graph`` in a thread and hand them to ``done`` (a Qt
    signal's emit, so that they reach the GUI thread). A fact whose making failed is left out
    (an edit changed the graph under it: it is made again when asked), or is ``UNMADE`` when
    memory or stack ran out, which the window is told, naming ``file``."""

    def run() -> None:
        made: dict[str, object] = {}
        for name in names:
            try:
                made[name] = FACTS[name](graph)
            except (MemoryError, RecursionError) as e:
                made[name] = UNMADE
                tell(failure_message(file or graph.name, e, _DOING.get(name, "sum it up")))
            except Exception:
                pass
        with contextlib.suppress(RuntimeError):  # the document is gone
            done(made)

    threading.Thread(target=run, name="xocview-facts", daemon=True).start()


class EditFacts(QObject):
    """A big graph's whole-graph facts made again in a thread after each edit or undo: on a
    20k-node graph FLOPs, validation and the summary take half a second, which the GUI thread
    would spend after every edit. They are made on a snapshot, so that a further edit does not
    change the graph under them; ``waits(name, count)`` while those of edit count ``count`` are
    being made, and ``arrived`` carries (count, facts) from the thread."""

    arrived = Signal(object)

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.count = -1
        self.names: set[str] = set()

    def start(self, graph: Graph, count: int, file: str) -> None:
        self.count, self.names = count, set(FACTS)
        emit = self.arrived.emit
        make_in_thread(graph.snapshot(), sorted(FACTS), lambda made: emit((count, made)), file)

    def waits(self, name: str, count: int) -> bool:
        return count == self.count and name in self.names

    def take(self, count: int, made: dict[str, object]) -> dict[str, object] | None:
        """The facts made for ``count`` when it is still the latest edit count started, else
        None (a later edit's thread follows); one that ran out of memory is left out, to be
        made when asked."""
        if count != self.count:
            return None
        self.names = set()
        return {name: value for name, value in made.items() if value is not UNMADE}
