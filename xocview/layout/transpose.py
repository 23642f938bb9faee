"""Phase 3b, local refinement of the order: swap adjacent nodes of a layer while it helps.

Before: positions from the median sweeps. After: positions where swapping two adjacent nodes
of the same component no longer lowers the crossings with the layers above and below
(Gansner et al.'s transpose), up to a few passes. With ``ties`` (every other pair of sweeps,
as dot does) equal counts swap too, which lets two coordinated moves through.

Vectorised as an odd-even transposition: a swap changes only the crossings of its own pair,
and pairs that share no node and lie on layers that are not adjacent are independent, so
each pass handles (even layers, even slots), (even, odd), (odd, even), (odd, odd) in four
array operations over the whole graph.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Adjacency", "transpose"]

_I = np.int64


class Adjacency:
    """Up and down neighbour lists (CSR) of a layered graph's nodes; ``both_ptr``/``both``
    hold them as one list of 2n rows (node v's up row, then n + v's down row), so that a
    pair's crossings above and below are counted in one pass."""

    def __init__(self, n: int, seg_upper: np.ndarray, seg_lower: np.ndarray) -> None:
        self.n = n
        self.up_ptr, self.up = _csr(n, seg_lower, seg_upper)
        self.down_ptr, self.down = _csr(n, seg_upper, seg_lower)
        self.both_ptr = np.concatenate([self.up_ptr, self.down_ptr[1:] + self.up_ptr[-1]])
        self.both = np.concatenate([self.up, self.down])


def _csr(n: int, key: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(key, kind="stable")
    ptr = np.zeros(n + 1, dtype=_I)
    np.cumsum(np.bincount(key, minlength=n), out=ptr[1:])
    return ptr, value[order]


def _pair_crossings(
    ptr: np.ndarray, nb: np.ndarray, pos: np.ndarray, v: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (v left of w): crossings of their edges now, and once swapped."""
    dv = ptr[v + 1] - ptr[v]
    dw = ptr[w + 1] - ptr[w]
    combos = dv * dw
    total = int(combos.sum())
    k = len(v)
    if total == 0:
        return np.zeros(k, dtype=_I), np.zeros(k, dtype=_I)
    pair = np.repeat(np.arange(k, dtype=_I), combos)
    start = np.repeat(np.cumsum(combos) - combos, combos)
    j = np.arange(total, dtype=_I) - start
    dwp = dw[pair]
    a = nb[ptr[v[pair]] + j // dwp]
    b = nb[ptr[w[pair]] + j % dwp]
    pa, pb = pos[a], pos[b]
    now = np.bincount(pair, weights=pa > pb, minlength=k).astype(_I)
    swapped = np.bincount(pair, weights=pa < pb, minlength=k).astype(_I)
    return now, swapped


def transpose(
    pos: np.ndarray,
    rank: np.ndarray,
    comp: np.ndarray,
    adj: Adjacency,
    max_passes: int = 8,
    ties: bool = False,
) -> np.ndarray:
    """Positions after odd-even adjacent swaps (see the module docstring)."""
    pos = pos.copy()
    n = len(pos)
    if n < 2:
        return pos
    seq = np.lexsort((pos, rank))  # slot -> node, layer by layer
    slot_rank = rank[seq]
    slot_local = pos[seq]
    same_layer = np.zeros(n, dtype=bool)
    same_layer[:-1] = slot_rank[:-1] == slot_rank[1:]
    phases = [
        np.flatnonzero(same_layer & (slot_rank % 2 == lp) & (slot_local % 2 == q))
        for lp in (0, 1)
        for q in (0, 1)
    ]
    # A pair is looked at again only when it or a neighbour of its nodes moved since its phase
    # last ran: otherwise its counts, and so its "no swap", are what they were.
    touched = np.zeros(n, dtype=_I)  # the step at which a node or a neighbour of it last moved
    last_run = [-1] * len(phases)
    step = 0
    for _ in range(max_passes):
        changed = False
        for p, i in enumerate(phases):
            step += 1
            if not len(i):
                continue
            v, w = seq[i], seq[i + 1]
            ok = (comp[v] == comp[w]) & (np.maximum(touched[v], touched[w]) >= last_run[p])
            last_run[p] = step
            if not ok.any():
                continue
            i, v, w = i[ok], v[ok], w[ok]
            k = len(v)
            both_now, both_sw = _pair_crossings(
                adj.both_ptr, adj.both, pos, np.r_[v, v + n], np.r_[w, w + n]
            )
            now, swapped = both_now[:k] + both_now[k:], both_sw[:k] + both_sw[k:]
            do = (swapped < now) | (ties & (swapped == now) & (now > 0))
            if not do.any():
                continue
            changed = True
            i, v, w = i[do], v[do], w[do]
            seq[i], seq[i + 1] = w, v
            pos[v] += 1
            pos[w] -= 1
            moved = np.concatenate([v, w])
            touched[moved] = step
            touched[_neighbours(adj.up_ptr, adj.up, moved)] = step
            touched[_neighbours(adj.down_ptr, adj.down, moved)] = step
        if not changed:
            break
    return pos


def _neighbours(ptr: np.ndarray, nb: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """The concatenated neighbour lists of ``nodes``."""
    counts = ptr[nodes + 1] - ptr[nodes]
    first = np.repeat(ptr[nodes] - (np.cumsum(counts) - counts), counts)
    return nb[first + np.arange(int(counts.sum()), dtype=_I)]
