"""The whole-graph facts the panels show (summary, FLOPs, validation), by name, so that a
Document can make a big graph's in a thread and keep them until an edit."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from xocview.model import Graph
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.model.analyses.summary import summarize
from xocview.model.validate import validate

__all__ = ["FACTS", "make_in_thread"]

FACTS: dict[str, Callable[[Graph], object]] = {
    "summary": summarize,
    "flops_at_batch_1": lambda g: graph_flops_assuming(g, 1),
    "validate": validate,
}


def make_in_thread(
    graph: Graph, names: list[str], done: Callable[[dict[str, object]], None]
) -> None:
    """Make the facts ``names`` of ``graph`` in a thread and hand them to ``done`` (a Qt
    signal's emit, so that they reach the GUI thread); an empty dict when making them failed
    (an edit changed the graph under them: they are made again when asked)."""

    def run() -> None:
        made: dict[str, object] = {}
        try:
            for name in names:
                made[name] = FACTS[name](graph)
        except Exception:
            made = {}
        with contextlib.suppress(RuntimeError):  # the document is gone
            done(made)

    threading.Thread(target=run, name="xocview-facts", daemon=True).start()
