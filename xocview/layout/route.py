"""Phase 5, edge routing: one polyline per input edge, from its source to its target.

Before: node centres and sizes (real and dummy), the dummy chains of normalisation, which
edges were reversed to break cycles.
After: for every input edge a (k, 2) array of points that starts on the source's bottom
border (its right side for a self-loop), passes through its dummies and ends on the target's
top border; reversed edges are drawn in their true direction. A dummy is a vertical piece as
tall as its layer, so that an edge runs straight down between the boxes of the layers it
crosses and turns only in the gaps between layers, where there are no boxes. Where a node
has several edges on one side, their ports are spread across that side in the order of the
edges' far ends, so that edges fan out instead of meeting in one point; edges that leave along
one trunk of shared dummies (a fan-out concentrated by normalisation) leave by one port, so
the trunk starts as one line instead of a fan converging on its first dummy.
"""

from __future__ import annotations

import numpy as np

from xocview.layout.normalize import Layered

__all__ = ["route_edges"]

_I = np.int64
_PORT_SPREAD = 0.6  # fraction of a side that ports may use


def _ports(owner: np.ndarray, toward_x: np.ndarray, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """x of each port: the ports of one node spread over its side, ordered by ``toward_x``."""
    k = len(owner)
    if k == 0:
        return np.zeros(0)
    order = np.lexsort((toward_x, owner))
    counts = np.bincount(owner, minlength=len(x))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank_in_node = np.empty(k, dtype=_I)
    rank_in_node[order] = np.arange(k) - starts[owner[order]]
    c = counts[owner]
    frac = np.where(c > 1, (rank_in_node + 0.5) / np.maximum(c, 1) - 0.5, 0.0)
    return x[owner] + frac * w[owner] * _PORT_SPREAD


def route_edges(
    lg: Layered,
    x: np.ndarray,
    y: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    edge_src: np.ndarray,
    edge_dst: np.ndarray,
    reversed_mask: np.ndarray,
    self_loop: np.ndarray,
    layer_half: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Polylines for the input edges (see the module docstring); ``layer_half`` is half the
    height of each layer's tallest node."""
    pairs = len(lg.pair_src)
    ptr, chain = lg.chain_ptr, lg.chain_nodes
    # Ports: the first dummy (or target) after the source, the last before the target.
    after_src = chain[ptr[:-1] + 1] if pairs else np.zeros(0, dtype=_I)
    before_dst = chain[ptr[1:] - 2] if pairs else np.zeros(0, dtype=_I)
    # the edges of one source that leave along one trunk (their first dummy) share one port
    step = lg.pair_src * lg.num_nodes + after_src  # one int key: unique(axis=0) is 20x slower
    first_step, step_of = np.unique(step, return_inverse=True)
    out_port = _ports(first_step // lg.num_nodes, x[first_step % lg.num_nodes], x, widths)
    out_port = out_port[step_of.reshape(-1)]
    in_port = _ports(lg.pair_dst, x[before_dst], x, widths)
    pts_x = x[chain].astype(np.float64)
    pts_y = y[chain].astype(np.float64)
    if pairs:
        first, last = ptr[:-1], ptr[1:] - 1
        pts_x[first] = out_port
        pts_y[first] = y[lg.pair_src] + heights[lg.pair_src] / 2
        pts_x[last] = in_port
        pts_y[last] = y[lg.pair_dst] - heights[lg.pair_dst] / 2
    xy = np.stack([pts_x, pts_y], axis=1)
    if layer_half is not None and len(chain):
        xy, ptr = _stay_in_gaps(lg, xy, ptr, y[chain], layer_half)
    pair_lines = [xy[ptr[k] : ptr[k + 1]] for k in range(pairs)]
    lines: list[np.ndarray] = []
    pair_iter = iter(lg.edge_pair.tolist())
    rev = reversed_mask.tolist()
    loops = self_loop.tolist()
    for e in range(len(edge_src)):
        if loops[e]:
            lines.append(
                _self_loop(
                    float(x[edge_src[e]]),
                    float(y[edge_src[e]]),
                    float(widths[edge_src[e]]),
                    float(heights[edge_src[e]]),
                )
            )
            continue
        line = pair_lines[next(pair_iter)]
        lines.append(line[::-1].copy() if rev[e] else line.copy())
    return lines


def _stay_in_gaps(
    lg: Layered, xy: np.ndarray, ptr: np.ndarray, centre: np.ndarray, layer_half: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Chains whose dummies span their layer's height and whose ends leave and enter their
    boxes straight down to and from the layer's edge, so that turns happen only in the gaps
    between layers. ``centre`` is each chain point's layer centre."""
    k = len(lg.chain_nodes)
    half = layer_half[lg.rank[lg.chain_nodes]]
    first = np.zeros(k, dtype=bool)
    last = np.zeros(k, dtype=bool)
    first[ptr[:-1]] = True
    last[ptr[1:] - 1] = True
    dummy = (lg.chain_nodes >= lg.num_real) & (half > 0)
    low = first & (xy[:, 1] < centre + half - 1e-9)  # a short source: down to the layer edge
    high = last & (xy[:, 1] > centre - half + 1e-9)  # a short target: from the layer edge
    reps = 1 + (dummy | low | high).astype(_I)
    out = np.repeat(xy, reps, axis=0)
    start = np.cumsum(reps) - reps  # where each chain point's copies begin
    d = np.flatnonzero(dummy)
    out[start[d], 1] = centre[d] - half[d]
    out[start[d] + 1, 1] = centre[d] + half[d]
    s = np.flatnonzero(low & ~dummy)
    out[start[s] + 1, 1] = centre[s] + half[s]
    t = np.flatnonzero(high & ~dummy & ~low)
    out[start[t], 1] = centre[t] - half[t]
    return out, np.concatenate([[0], np.cumsum(reps)])[ptr]


def _self_loop(cx: float, cy: float, w: float, h: float) -> np.ndarray:
    """A small loop on the node's right side: out and back in."""
    right = cx + w / 2
    reach = 12.0  # half the least gap between neighbours (node_sep 24): it meets no box
    return np.array(
        [
            [right, cy - h / 4],
            [right + reach, cy - h / 4],
            [right + reach, cy + h / 4],
            [right, cy + h / 4],
        ]
    )
