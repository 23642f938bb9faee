"""Named per-node metrics other than time (``performance.<name>``), as Model Explorer's node data
brings them: what the graph stores and the values to colour by.

Times (``performance.time.<source>``) add up: a group's is the sum of its leaves'. A named
metric may be anything (an error, a memory size, a count), so a group shows the largest of its
leaves' values, unless the group holds a value of its own: a collapsed group is as hot as its
hottest member, which stays true whatever the metric measures.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from xocview.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = ["METRIC_MODE", "metric_key", "metric_mode", "metric_names", "node_metric", "own_metric"]

_PERFORMANCE = "performance"
_TIME = "time"  # performance.time holds the times by source, not a metric
METRIC_MODE = "metric:"  # a colour mode "metric:<name>" colours by performance.<name>


def metric_key(name: str) -> str:
    """The node metadata key of the metric ``name``: ``performance.<name>``."""
    return f"{_PERFORMANCE}.{name}"


def metric_mode(name: str) -> str:
    """The colour mode that colours by the metric ``name``."""
    return METRIC_MODE + name


def _number(value: object) -> float:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value) if ok and math.isfinite(value) else math.nan  # type: ignore[arg-type]


def _metrics(metadata: Mapping[str, object]) -> Mapping[str, object]:
    perf = metadata.get(_PERFORMANCE)
    return perf if isinstance(perf, Mapping) else {}


def metric_names(graph: Graph) -> list[str]:
    """The names of the metrics some node stores as a number, by name (``time`` is not one)."""
    found: set[str] = set()
    for node in graph.nodes:
        if _PERFORMANCE not in node.metadata:
            continue
        for name, value in _metrics(node.metadata).items():
            if name != _TIME and name not in found and not math.isnan(_number(value)):
                found.add(name)
    return sorted(found)


def own_metric(metadata: Mapping[str, object], name: str) -> float:
    """A node's own ``performance.<name>`` (its metadata's), NaN when it stores no finite
    number."""
    return _number(_metrics(metadata).get(name)) if _PERFORMANCE in metadata else math.nan


def node_metric(graph: Graph, name: str, h: Hierarchy | None = None) -> np.ndarray:
    """``performance.<name>`` per node position: a node's own number, else (a group) the
    largest of its members'; NaN where neither is known."""
    h = h if h is not None else Hierarchy.of(graph)
    values = np.full(len(graph.nodes), np.nan)
    for i, node in enumerate(graph.nodes):
        values[i] = own_metric(node.metadata, name)
    best = np.full(len(graph.nodes), np.nan)
    for depth in range(h.max_depth, -1, -1):  # deepest first: members are final before groups
        at = np.flatnonzero(h.depth == depth)
        open_groups = at[h.is_group[at] & np.isnan(values[at])]
        values[open_groups] = best[open_groups]
        if depth > 0:
            np.fmax.at(best, h.parent[at], values[at])
    return values
