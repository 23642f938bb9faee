"""Per-node measures for heat colouring: measured time, FLOPs and parameters.

A run records each leaf's median time (milliseconds) under ``performance.time.<engine>``: the
bundled executor's as ``performance.time.cpu``, onnxruntime's as
``performance.time.onnxruntime``, so both can live on one graph. XOC JSON keeps them, so a saved
file opens heat-coloured. A group's value is the sum over its leaves (DESIGN.md, "Hierarchy"):
derived here, never stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, TypeGuard

import numpy as np

from xocview.model.analyses import opfacts
from xocview.model.analyses.parameters import parameters
from xocview.model.hierarchy import Hierarchy

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = [
    "CPU",
    "ORT_TIME_KEY",
    "RUN_TIMES",
    "TIME_KEY",
    "TIME_KEYS",
    "engine_label",
    "format_ms",
    "node_flops",
    "node_parameters",
    "node_times_ms",
    "own_times_ms",
    "stored_time",
    "subgraph_holders",
    "subtree_sums",
    "time_key",
    "time_sources",
    "times_as_metadata",
]

CPU = "cpu"  # the bundled executor's times: performance.time.cpu


def time_key(engine: str = CPU) -> str:
    """The node metadata key of ``engine``'s times: ``performance.time.<engine>``."""
    return f"performance.time.{engine}"


TIME_KEY = time_key(CPU)
ORT_TIME_KEY = time_key("onnxruntime")
# the times each run engine records (``xocview run --engine``, the Run dialog's Engine)
RUN_TIMES = {"xocview": CPU, "onnxruntime": "onnxruntime"}
TIME_KEYS = {engine: time_key(times) for engine, times in RUN_TIMES.items()}  # by run engine


def engine_label(engine: str) -> str:
    """What the user reads for the times under ``performance.time.<engine>``: the name of the
    run engine that records them ("xocview" for "cpu"), else ``engine`` itself."""
    for run_engine, times in RUN_TIMES.items():
        if times == engine:
            return run_engine
    return engine


def times_as_metadata(node_times: Mapping[str, float]) -> dict[str, float]:
    """Median seconds per node as the milliseconds stored under a time key (``time_key``)."""
    return {node_id: round(seconds * 1e3, 6) for node_id, seconds in node_times.items()}


_NO_TIMES: Mapping[str, object] = {}


def _node_times(node_metadata: Mapping[str, object]) -> Mapping[str, object]:
    """A node's ``performance.time`` mapping (empty when it has none). Metadata read from
    files is dicts: they are checked first, as the abstract Mapping is slow to test."""
    perf = node_metadata.get("performance")
    if perf is None:
        return _NO_TIMES
    if isinstance(perf, (dict, Mapping)):
        t = perf.get("time")
        if isinstance(t, (dict, Mapping)):
            return t
    return _NO_TIMES


def _is_time(value: object) -> TypeGuard[float]:
    return isinstance(value, (float, int)) and not isinstance(value, bool) and value >= 0


def stored_time(node_metadata: Mapping[str, object], engine: str = CPU) -> float:
    """A node's ``performance.time.<engine>`` in ms, NaN when it has none (or not a number
    >= 0)."""
    value = _node_times(node_metadata).get(engine)
    return float(value) if _is_time(value) else float("nan")


def time_sources(graph: Graph) -> list[str]:
    """The engines whose times some node stores (``performance.time.<engine>``, a number
    >= 0): "cpu" first, then the others by name."""
    found: set[str] = set()
    for nd in graph.nodes:
        if "performance" not in nd.metadata:  # most nodes: no times
            continue
        for k, v in _node_times(nd.metadata).items():
            if k not in found and isinstance(k, str) and _is_time(v):
                found.add(k)
    return sorted(found, key=lambda engine: (engine != CPU, engine))


def subtree_sums(
    leaf_values: np.ndarray, h: Hierarchy, own_too: np.ndarray | None = None
) -> np.ndarray:
    """Each leaf's value, and for each group the sum over its leaves with a value; the groups
    in ``own_too`` (an If or Loop, which runs and has a time of its own besides its bodies')
    add their own value as well.

    NaN marks a leaf without a value and a group none of whose leaves has one.
    """
    values = leaf_values.astype(np.float64)
    own = np.where(h.is_group, np.nan, values)
    if own_too is not None:
        own = np.where(own_too, values, own)
    total = np.where(np.isnan(own), 0.0, own)
    known = ~np.isnan(own)
    for depth in range(h.max_depth, 0, -1):  # deepest first: a group gets its whole subtree
        at = np.flatnonzero(h.depth == depth)
        np.add.at(total, h.parent[at], total[at])
        np.logical_or.at(known, h.parent[at], known[at])
    return np.where(known, total, np.nan)


def node_times_ms(graph: Graph, h: Hierarchy | None = None, engine: str = CPU) -> np.ndarray:
    """``engine``'s stored milliseconds per node position (groups: sums over their leaves)."""
    h = h if h is not None else Hierarchy.of(graph)
    return subtree_sums(own_times_ms(graph, engine), h, subgraph_holders(graph, h))


def own_times_ms(graph: Graph, engine: str = CPU) -> np.ndarray:
    """Each node's own milliseconds stored for ``engine`` (NaN where it has none): a leaf's
    time, an If's or Loop's share besides its bodies; a plain group has none."""
    out = np.full(len(graph.nodes), np.nan)
    # most nodes of a file store no times: one dict lookup each (130k nodes: 15 ms, not 0.45 s)
    timed = [i for i, nd in enumerate(graph.nodes) if "performance" in nd.metadata]
    for i in timed:
        out[i] = stored_time(graph.nodes[i].metadata, engine)
    return out


def subgraph_holders(graph: Graph, h: Hierarchy) -> np.ndarray:
    """Nodes whose children are the bodies of their graph attributes (If, Loop, Scan)."""
    n = len(graph.nodes)
    in_body = np.fromiter(("subgraph" in nd.metadata for nd in graph.nodes), bool, count=n)
    holds = np.zeros(n, dtype=bool)
    parents = h.parent[in_body]
    holds[parents[parents >= 0]] = True
    return holds


def node_flops(graph: Graph, h: Hierarchy | None = None) -> np.ndarray:
    """FLOPs per node position where ops.json can tell them (groups: sums).

    Unknown dimensions count as 1: a model exported with a dynamic batch would otherwise have
    no FLOPs to colour by, and scaling every node alike leaves the colours as they are.
    """
    h = h if h is not None else Hierarchy.of(graph)
    leaf = np.full(len(graph.nodes), np.nan)
    for i in np.flatnonzero(~h.is_group).tolist():
        f = opfacts.flops(graph, i, unknown_dims=1)
        if f is not None:
            leaf[i] = f
    return subtree_sums(leaf, h)


def node_parameters(graph: Graph, h: Hierarchy | None = None) -> np.ndarray:
    """Weight elements per node position (groups: sums)."""
    h = h if h is not None else Hierarchy.of(graph)
    leaf = np.zeros(len(graph.nodes))
    for i in np.flatnonzero(~h.is_group).tolist():
        leaf[i] = parameters(graph, i)
    return subtree_sums(leaf, h)


def format_ms(ms: float) -> str:
    """A time in milliseconds as a person reads it: ``2,514 ms``, ``12.5 ms``, ``0.031 ms``.

    Three significant digits from 0.1 ms up (whole milliseconds with thousands separators from
    100 ms), two below it, never an exponent, at most six decimals.
    """
    if not math.isfinite(ms):
        return "-"
    size = abs(ms)
    if size < 5e-7:
        return "0 ms" if size == 0 else "<0.000001 ms"
    digits = 3 if size >= 0.1 else 2
    decimals = min(6, max(0, digits - 1 - math.floor(math.log10(size))))
    if decimals and round(size, decimals) >= 10.0 ** (digits - decimals):
        decimals -= 1  # 99.96 reads 100, not 100.0
    return f"{ms:,.{decimals}f} ms"
