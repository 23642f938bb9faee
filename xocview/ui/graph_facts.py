"""The whole-graph facts the panels show (summary, FLOPs, validation), by name, so that a
Document can make a big graph's in a thread and keep them until an edit."""

from __future__ import annotations

from collections.abc import Callable

from xocview.model import Graph
from xocview.model.analyses.opfacts import graph_flops_assuming
from xocview.model.analyses.summary import summarize
from xocview.model.validate import validate

__all__ = ["FACTS"]

FACTS: dict[str, Callable[[Graph], object]] = {
    "summary": summarize,
    "flops_at_batch_1": lambda g: graph_flops_assuming(g, 1),
    "validate": validate,
}

