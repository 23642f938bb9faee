"""Compare two graphs: which nodes and tensors correspond, and what changed between them.

``diff_graphs(old, new)`` matches nodes by id and, where ids changed (exporters name nodes
their own way; a loader numbers unnamed ONNX nodes by position, so one removal shifts every
later id), by op type and structure (``matching``); then tensors through their matched
producers and readers (``tensors``), so that a renamed tensor is one finding. It reports added,
removed and changed nodes, changed graph inputs and outputs, renamed tensors and changed graph
metadata (``result`` documents the findings and the JSON report). Derived section groups take
no part; derived scope groups are matched but report nothing of their own (their members do).
Weight values are not compared (XOC JSON keeps none).

The work is numpy passes over the graphs' index arrays and one Python pass over the matched
pairs; 100k-node graphs compare in seconds.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.graph_io import graph_findings, io_findings, rename_findings
from xocview.model.analyses.diff.matching import match_nodes
from xocview.model.analyses.diff.nodes import compare_nodes
from xocview.model.analyses.diff.overlay import shown_status, time_ratios
from xocview.model.analyses.diff.result import (
    ABSENT,
    ADDED,
    CHANGED,
    GRAPH_CHANGED,
    INPUT_ADDED,
    INPUT_CHANGED,
    INPUT_REMOVED,
    KINDS,
    NODE_ADDED,
    NODE_CHANGED,
    NODE_REMOVED,
    OUTPUT_ADDED,
    OUTPUT_CHANGED,
    OUTPUT_REMOVED,
    REMOVED,
    SAME,
    STATUS_NAMES,
    TENSOR_RENAMED,
    Change,
    Finding,
    GraphDiff,
)
from xocview.model.analyses.diff.sides import Side, Vocab, make_side
from xocview.model.analyses.diff.tensors import match_tensors
from xocview.model.analyses.profile import own_times_ms, time_sources
from xocview.model.graph import Graph

__all__ = [
    "ABSENT",
    "ADDED",
    "CHANGED",
    "GRAPH_CHANGED",
    "INPUT_ADDED",
    "INPUT_CHANGED",
    "INPUT_REMOVED",
    "KINDS",
    "NODE_ADDED",
    "NODE_CHANGED",
    "NODE_REMOVED",
    "OUTPUT_ADDED",
    "OUTPUT_CHANGED",
    "OUTPUT_REMOVED",
    "REMOVED",
    "SAME",
    "STATUS_NAMES",
    "TENSOR_RENAMED",
    "Change",
    "Finding",
    "GraphDiff",
    "diff_graphs",
    "shown_status",
    "time_ratios",
]


def diff_graphs(old: Graph, new: Graph) -> GraphDiff:
    """Everything that differs between ``old`` and ``new`` (neither is changed)."""
    vocab = Vocab()
    a, b = make_side(old, vocab), make_side(new, vocab)
    ab, ba = match_nodes(a, b)
    tab, tba = match_tensors(a, b, ab)
    nodes = compare_nodes(a, b, (ab, ba, tab, tba))
    inputs, outputs = io_findings(a, b, tab, tba)
    findings = (
        graph_findings(old, new)
        + inputs
        + outputs
        + nodes.removed
        + nodes.added
        + nodes.changed
        + rename_findings(a, b, tab)
    )
    findings.sort(key=lambda f: KINDS.index(f.kind))  # stable: each kind keeps its order
    old_status = _statuses(a, ab, REMOVED, [i for i, _ in nodes.changed_pairs])
    new_status = _statuses(b, ba, ADDED, [j for _, j in nodes.changed_pairs])
    return GraphDiff(
        old=old,
        new=new,
        node_map=ab,
        node_map_back=ba,
        tensor_map=tab,
        tensor_map_back=tba,
        old_status=old_status,
        new_status=new_status,
        findings=tuple(findings),
        follow_on=tuple(nodes.follow_on),
        times=_times(old, new, ab),
    )


def _statuses(side: Side, to_other: np.ndarray, alone: int, changed: list[int]) -> np.ndarray:
    """SAME/CHANGED for matched nodes, ``alone`` for the others; derived groups sum up their
    members (deepest first): all alone -> alone, all same -> same, else changed."""
    status = np.full(side.n, SAME, dtype=np.int8)
    status[to_other < 0] = alone
    status[np.asarray(changed, dtype=np.int64)] = CHANGED
    h = side.hierarchy
    for depth in range(h.max_depth, 0, -1):
        kids = np.flatnonzero((h.depth == depth) & side.derived[np.maximum(h.parent, 0)])
        kids = kids[h.parent[kids] >= 0]
        if not len(kids):
            continue
        parents = h.parent[kids]
        total = np.bincount(parents, minlength=side.n)
        groups = np.unique(parents)
        status[groups] = CHANGED
        for value in (SAME, alone):
            count = np.bincount(parents[status[kids] == value], minlength=side.n)
            status[groups[count[groups] == total[groups]]] = value
    return status


def _times(old: Graph, new: Graph, ab: np.ndarray) -> dict[str, dict[str, float]]:
    """Total measured milliseconds per engine that both graphs carry times of."""
    out: dict[str, dict[str, float]] = {}
    for engine in sorted(set(time_sources(old)) & set(time_sources(new))):
        ta, tb = own_times_ms(old, engine), own_times_ms(new, engine)
        matched = np.flatnonzero(ab >= 0)
        both = ~np.isnan(ta[matched]) & ~np.isnan(tb[ab[matched]])
        out[engine] = {
            "old_ms": float(np.nansum(ta)),
            "new_ms": float(np.nansum(tb)),
            "nodes": int(np.count_nonzero(both)),
        }
    return out
