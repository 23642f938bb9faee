"""Phase 4, coordinate assignment: x of every node (Brandes-Köpf), y of every layer.

Before: layers in their final order, node widths (dummies are thin), segments between
adjacent layers.
After: ``x`` node centres with no two boxes of a layer closer than their separation, long
edges (dummy chains) straight where possible, each node balanced over its neighbours.

Brandes-Köpf: four alignments (towards upper or lower neighbours, sweeping from the left or
the right) join each node to a median neighbour into vertical blocks, never crossing an inner
segment (dummy to dummy) with another alignment; each alignment's blocks are packed as far
as separations allow (a longest path over the block graph, which is the compaction without
BK's class shifting); the four results are aligned to the narrowest and averaged by their two
medians.
"""

from __future__ import annotations

import itertools

import numpy as np

__all__ = ["assign_x", "layer_y"]

_I = np.int64


def layer_y(rank: np.ndarray, heights: np.ndarray, count: int, gap: float) -> np.ndarray:
    """Centre y of every layer: each layer as tall as its tallest node, ``gap`` between."""
    tallest = np.zeros(count)
    np.maximum.at(tallest, rank, heights)
    tops = np.concatenate([[0.0], np.cumsum(tallest + gap)[:-1]])
    return tops + tallest / 2


def assign_x(
    layer_nodes: list[np.ndarray],
    pos: np.ndarray,
    seg_upper: np.ndarray,
    seg_lower: np.ndarray,
    is_dummy: np.ndarray,
    widths: np.ndarray,
    node_sep: float,
    edge_sep: float,
) -> np.ndarray:
    """Balanced Brandes-Köpf x coordinates of all nodes (real and dummy).

    Two real nodes keep ``node_sep`` between their boxes; anything next to a dummy (a long
    edge passing by) keeps ``edge_sep``.
    """
    n = len(pos)
    if n == 0:
        return np.zeros(0)
    ordered = [members[np.argsort(pos[members])] for members in layer_nodes]
    ups = _neighbours(n, seg_lower, seg_upper, pos)
    downs = _neighbours(n, seg_upper, seg_lower, pos)
    marked = _type1_conflicts(ordered, pos, ups, is_dummy)
    results = []
    for vertical in ("down", "up"):
        layers = ordered if vertical == "down" else ordered[::-1]
        neigh = ups if vertical == "down" else downs
        for horizontal in ("left", "right"):
            lay = layers if horizontal == "left" else [m[::-1] for m in layers]
            x = _one_alignment(
                n,
                lay,
                neigh,
                marked,
                widths,
                is_dummy,
                (node_sep, edge_sep),
                vertical == "down",
                horizontal == "left",
            )
            results.append(x if horizontal == "left" else -x)
    xs = np.stack(results)
    widths_of = xs.max(axis=1) - xs.min(axis=1)
    narrow = int(np.argmin(widths_of))
    for i in range(4):
        if i % 2 == 0:  # left-packed: align left edges
            xs[i] += xs[narrow].min() - xs[i].min()
        else:
            xs[i] += xs[narrow].max() - xs[i].max()
    xs.sort(axis=0)
    x = (xs[1] + xs[2]) / 2
    return x - (x - widths / 2).min()


def _neighbours(n: int, key: np.ndarray, other: np.ndarray, pos: np.ndarray) -> list[list[int]]:
    """For each node, its neighbours via (key -> other) segments, ordered by position."""
    order = np.lexsort((pos[other], key))
    ptr = np.zeros(n + 1, dtype=_I)
    np.cumsum(np.bincount(key, minlength=n), out=ptr[1:])
    flat = other[order].tolist()
    p = ptr.tolist()
    return [flat[p[v] : p[v + 1]] for v in range(n)]


def _type1_conflicts(
    ordered: list[np.ndarray], pos: np.ndarray, ups: list[list[int]], is_dummy: np.ndarray
) -> set[tuple[int, int]]:
    """Non-inner segments that cross an inner segment (dummy to dummy): never aligned."""
    marked: set[tuple[int, int]] = set()
    p = pos.tolist()
    dummy = is_dummy.tolist()
    for i in range(1, len(ordered)):
        lower = ordered[i].tolist()
        upper_len = len(ordered[i - 1])
        k0, left = 0, 0
        for l1, v in enumerate(lower):
            inner_up = next((u for u in ups[v] if dummy[u] and dummy[v]), None)
            if l1 == len(lower) - 1 or inner_up is not None:
                k1 = p[inner_up] if inner_up is not None else upper_len - 1
                while left <= l1:
                    w = lower[left]
                    for u in ups[w]:
                        if (p[u] < k0 or p[u] > k1) and not (dummy[u] and dummy[w]):
                            marked.add((u, w))
                    left += 1
                k0 = k1
    return marked


def _one_alignment(
    n: int,
    layers: list[np.ndarray],
    neigh: list[list[int]],
    marked: set[tuple[int, int]],
    widths: np.ndarray,
    is_dummy: np.ndarray,
    seps: tuple[float, float],
    down: bool,
    left: bool,
) -> np.ndarray:
    """One of the four BK variants: vertical alignment, then packing of the blocks."""
    root = list(range(n))
    align = list(range(n))
    # position within the layer in this variant's left-to-right sense
    rank_pos = [0] * n
    for members in layers:
        for k, v in enumerate(members.tolist()):
            rank_pos[v] = k
    for members in layers[1:]:
        r = -1
        for v in members.tolist():
            nb = neigh[v] if left else neigh[v][::-1]
            d = len(nb)
            if not d:
                continue
            for m in sorted({(d - 1) // 2, d // 2}):
                if align[v] != v:
                    break
                u = nb[m]
                conflict = (u, v) in marked if down else (v, u) in marked
                if not conflict and r < rank_pos[u]:
                    align[u] = v
                    root[v] = root[u]
                    align[v] = root[v]
                    r = rank_pos[u]
    # Packing: the block graph (left block -> right block, by separation) in longest path.
    w = widths.tolist()
    dummy = is_dummy.tolist()
    node_sep, edge_sep = seps
    succ: dict[int, list[tuple[int, float]]] = {}
    indeg = [0] * n
    for members in layers:
        ms = members.tolist()
        for a, b in itertools.pairwise(ms):
            ra, rb = root[a], root[b]
            gap = (w[a] + w[b]) / 2 + (edge_sep if dummy[a] or dummy[b] else node_sep)
            succ.setdefault(ra, []).append((rb, gap))
            indeg[rb] += 1
    # Pass 1: smallest coordinates, blocks in topological order of the block graph.
    x = [0.0] * n
    stack = [v for v in range(n) if root[v] == v and indeg[v] == 0]
    topo: list[int] = []
    while stack:
        a = stack.pop()
        topo.append(a)
        for b, gap in succ.get(a, ()):
            if x[a] + gap > x[b]:
                x[b] = x[a] + gap
            indeg[b] -= 1
            if indeg[b] == 0:
                stack.append(b)
    # Pass 2: move every block right up to its right neighbours (as dagre does), so that
    # a block with nothing on its left does not sit at the far edge of the drawing.
    for a in reversed(topo):
        nxt = succ.get(a)
        if nxt:
            limit = min(x[b] - gap for b, gap in nxt)
            if limit > x[a]:
                x[a] = limit
    xr = np.asarray(x)
    return xr[np.asarray(root, dtype=_I)]
