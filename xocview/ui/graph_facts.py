"""The whole-graph facts the panels show (summary, FLOPs, validation), by name, so that a
load worker can make them off the GUI thread and a Document can keep them until an edit."""

from __future__ import annotations

from collections.abc import Callable

from xocview.model import Graph
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.model.analyses.summary import summarize
from xocview.model.validate import validate

__all__ = ["FACTS", "graph_facts"]

FACTS: dict[str, Callable[[Graph], object]] = {
    "summary": summarize,
    "flops_at_batch_1": lambda g: graph_flops_assuming(g, 1),
    "validate": validate,
}


def graph_facts(graph: Graph) -> dict[str, object]:
    """Every fact of ``FACTS`` for ``graph`` (seconds for 100k nodes: made in the worker)."""
    return {name: make(graph) for name, make in FACTS.items()}
