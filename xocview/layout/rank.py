"""Phase 2, layer assignment: longest path, then moves that shorten the total edge span.

Before: an acyclic LayoutGraph.
After: ``rank[v]`` integers with ``rank[dst] > rank[src]`` for every edge, smallest rank 0.

Longest path puts every source on layer 0, so a weight feeding a node deep in the graph gets
an edge across the whole drawing. Each node is then moved, one at a time (Gauss-Seidel sweeps
in topological order), to the end of its feasible interval that its edges prefer: down to
just above its nearest successor when it has more out-edges than in-edges, up to just below
its farthest predecessor when it has more in-edges. Chains that hang from one consumer (a
weight, then Unsqueeze) follow it down, the subtree move that single-node moves miss.
The sweeps stop when nothing moves (or after a fixed number). A balanced node (as many
edges in as out) moves down too: that costs its own edges nothing and frees what hangs above
it (a mask or position table each stage makes from the previous stage's would otherwise
stay at the top with edges across the whole drawing). Group moves and single-node sweeps
alternate while the total span falls, since each frees the other to move.
"""

from __future__ import annotations

import numpy as np

from xocview.layout.acyclic import topological_levels
from xocview.layout.graph import LayoutGraph

__all__ = ["assign_ranks", "total_span"]

_I = np.int64
_MAX_SWEEPS = 12
_MAX_GROUP = 64
_ROUNDS = 4


def total_span(g: LayoutGraph, rank: np.ndarray) -> int:
    return int((rank[g.dst] - rank[g.src]).sum())


def assign_ranks(g: LayoutGraph) -> np.ndarray:
    """Ranks of an acyclic graph (ValueError when it has a cycle)."""
    level = topological_levels(g)
    if level is None:
        raise ValueError("assign_ranks needs an acyclic graph; run acyclic.feedback_edges first")
    if g.m == 0:
        return level
    # From the top every source sits on layer 0; from the bottom every sink on the last. Each
    # start leaves structures the single and group moves cannot undo (a side head hanging at
    # the bottom; a decoder's first blocks at the top, far above the encoder output they
    # wait for), so both are improved and the shorter kept.
    back = topological_levels(LayoutGraph(g.n, g.dst, g.src))
    assert back is not None  # the reversed graph of a DAG is a DAG
    order = np.argsort(level, kind="stable").tolist()
    best = None
    for start in (level, int(back.max()) - back):
        got = _improve(g, start.tolist(), order)
        if best is None or total_span(g, got) < total_span(g, best):
            best = got
    assert best is not None
    return best


def _improve(g: LayoutGraph, rank: list[int], order: list[int]) -> np.ndarray:
    """Single-node sweeps and group moves from a feasible ``rank``, ``order`` topological."""
    optr, oe = g.out_csr()
    iptr, ie = g.in_csr()
    succ, pred = g.dst[oe].tolist(), g.src[ie].tolist()
    op, ip = optr.tolist(), iptr.tolist()
    outd = np.diff(optr).tolist()
    ind = np.diff(iptr).tolist()
    # A "hanging" node feeds one edge and only hanging nodes feed it (a weight and the
    # Unsqueeze/Reshape chain after it): it follows its consumer wherever that goes, so its
    # edge does not hold the consumer up.
    hanging = [False] * g.n
    eff_in = list(ind)
    for v in order:
        preds = pred[ip[v] : ip[v + 1]]
        held = sum(hanging[u] for u in preds)
        eff_in[v] -= held
        hanging[v] = outd[v] == 1 and held == len(preds)
    # Balanced nodes (as many edges in as out) go down too: the move costs them nothing and
    # lets what hangs above them follow (a mask made per stage from the previous stage's).
    down = [v for v in reversed(order) if outd[v] and outd[v] >= eff_in[v]]
    going_down = set(down)
    up = [v for v in order if ind[v] > outd[v] and v not in going_down]
    span = total_span(g, np.asarray(rank, dtype=_I))
    for _ in range(_ROUNDS):  # group moves free single nodes to move again, and back
        _sweeps(rank, down, up, succ, op, pred, ip)
        rank = shift_groups(g, rank)
        now = total_span(g, np.asarray(rank, dtype=_I))
        if now >= span:
            break
        span = now
    out = np.asarray(rank, dtype=_I)
    return out - out.min()


def _sweeps(
    rank: list[int],
    down: list[int],
    up: list[int],
    succ: list[int],
    op: list[int],
    pred: list[int],
    ip: list[int],
) -> None:
    """Gauss-Seidel moves of single nodes, in place, until nothing moves."""
    for _ in range(_MAX_SWEEPS):
        moved = False
        for v in down:
            best = min([rank[w] for w in succ[op[v] : op[v + 1]]]) - 1
            if best != rank[v]:
                rank[v] = best
                moved = True
        for v in up:
            best = max([rank[u] for u in pred[ip[v] : ip[v + 1]]]) + 1
            if best != rank[v]:
                rank[v] = best
                moved = True
        if not moved:
            break


def shift_groups(g: LayoutGraph, rank: list[int]) -> list[int]:
    """Move a node together with the neighbours it would collide with, while spans shrink.

    A node one layer above its successor cannot move down alone; moving it with every tight
    successor below it (recursively) can still shorten the edges that enter the group. Each
    move is tried down, then up, and kept when the total span drops; nodes next to a moved
    group are tried again. Groups are capped at _MAX_GROUP nodes and the whole search at a
    budget proportional to the graph, so that it stays linear-ish: the promotion heuristic of
    Nikolov and Tarassov, in both directions, each move going as far as it keeps paying.
    """
    n = g.n
    optr, oe = g.out_csr()
    iptr, ie = g.in_csr()
    succ_all, pred_all = g.dst[oe].tolist(), g.src[ie].tolist()
    op, ip = optr.tolist(), iptr.tolist()
    succ = [list(dict.fromkeys(succ_all[op[v] : op[v + 1]])) for v in range(n)]
    pred = [list(dict.fromkeys(pred_all[ip[v] : ip[v + 1]])) for v in range(n)]
    mult: dict[tuple[int, int], int] = {}
    for e in zip(g.src.tolist(), g.dst.tolist(), strict=True):
        mult[e] = mult.get(e, 0) + 1
    # A link of a chain (one edge in, one out) whose next node in the move's direction is
    # tight would take that node's group along at the same gain: trying from there is enough
    # (a chain of 20k nodes otherwise gathers a capped group at every node, both ways).
    link = (np.diff(optr) == 1) & (np.diff(iptr) == 1)
    link_l = link.tolist()
    work = list(range(n - 1, -1, -1))
    queued = [True] * n
    budget = 50 * (n + g.m)

    def try_move(v: int, step: int) -> list[int] | None:
        nonlocal budget
        ahead, behind = (succ, pred) if step > 0 else (pred, succ)
        if link_l[v] and rank[ahead[v][0]] == rank[v] + step:
            return None
        group = {v}
        order = [v]
        stack = [v]
        while stack:
            x = stack.pop()
            target = rank[x] + step
            for w in ahead[x]:
                if rank[w] == target and w not in group:
                    group.add(w)
                    order.append(w)
                    stack.append(w)
            if len(order) > _MAX_GROUP:
                budget -= len(order)
                return None
        budget -= len(order)
        change = 0
        room = n  # how far the group can go before an edge leaving it becomes tight
        for x in order:
            for w in ahead[x]:
                if w not in group:
                    change -= mult[(x, w) if step > 0 else (w, x)]
                    room = min(room, abs(rank[w] - rank[x]) - 1)
            for u in behind[x]:
                if u not in group:
                    change += mult[(u, x) if step > 0 else (x, u)]
        if change >= 0 or room < 1:
            return None
        # The span falls by |change| per layer until an edge ahead becomes tight: go all the
        # way at once (a network-simplex-like pivot) instead of one layer per attempt.
        for x in order:
            rank[x] += step * room
        return order

    while work and budget > 0:
        v = work.pop()
        queued[v] = False
        moved = try_move(v, 1) or try_move(v, -1)
        for x in moved or ():
            for u in (x, *pred[x], *succ[x]):
                if not queued[u]:
                    queued[u] = True
                    work.append(u)
    return rank
