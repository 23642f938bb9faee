"""What a side-by-side view of a comparison colours each node by.

``shown_status``: a node's own status, except that a group whose own status is SAME but that
holds added, removed or changed nodes shows CHANGED, so that a collapsed group tells that
something inside it differs. ``time_ratios``: new time / old time per node on each side, for
two runs of one graph; a group's ratio is that of the summed times of its leaves matched on
both sides, so that collapsed groups (sections included) are coloured too.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.result import CHANGED, SAME, GraphDiff
from xocview.model.analyses.profile import own_times_ms, subtree_sums
from xocview.model.hierarchy import Hierarchy

__all__ = ["shown_status", "time_ratios"]


def shown_status(diff: GraphDiff, old_side: bool) -> np.ndarray:
    """Per node position of one side: its status, CHANGED for a group with differences inside."""
    graph = diff.old if old_side else diff.new
    status = (diff.old_status if old_side else diff.new_status).copy()
    h = Hierarchy.of(graph)
    differs = status != SAME
    for depth in range(h.max_depth, 0, -1):
        at = np.flatnonzero((h.depth == depth) & differs)
        parents = h.parent[at]
        differs[parents[parents >= 0]] = True
    status[differs & (status == SAME)] = CHANGED
    return status


def time_ratios(diff: GraphDiff, engine: str) -> tuple[np.ndarray, np.ndarray]:
    """New/old ratio of ``engine``'s times per node position of the old side and of the new
    side; NaN where a node (or every leaf of a group) has no time on one side or no partner."""
    t_old, t_new = own_times_ms(diff.old, engine), own_times_ms(diff.new, engine)
    ab = diff.node_map
    paired = np.flatnonzero(ab >= 0)
    ok = paired[np.isfinite(t_old[paired]) & np.isfinite(t_new[ab[paired]])]
    out = []
    for graph, mine, theirs in (
        (diff.old, ok, ab[ok]),
        (diff.new, ab[ok], ok),
    ):
        n = len(graph.nodes)
        old_ms, new_ms = np.full(n, np.nan), np.full(n, np.nan)
        old_ms[mine] = t_old[mine if graph is diff.old else theirs]
        new_ms[mine] = t_new[theirs if graph is diff.old else mine]
        h = Hierarchy.of(graph)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = subtree_sums(new_ms, h) / subtree_sums(old_ms, h)
        out.append(np.where(np.isfinite(ratio), ratio, np.nan))
    return out[0], out[1]
