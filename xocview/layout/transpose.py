"""Phase 3b, local refinement of the order: swap neighbours in a layer while it helps.

Before: positions from the median sweeps. After: positions where no single swap of two
adjacent nodes of the same component lowers the crossings with the layers above and below
(Gansner et al.'s transpose), up to a few passes. With ``ties`` (every other sweep, as dot
does) equal counts swap too, which lets two coordinated moves through. Sequential by nature
(each swap changes the next comparison), so it runs on Python lists; a pass costs O(sum of
degrees).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import numpy as np

__all__ = ["transpose"]

_I = np.int64


def _crossings(left: list[int], right: list[int]) -> int:
    """Pairs a in left, b in right with a > b (left's edges end right of right's)."""
    if not left or not right:
        return 0
    total = 0
    n = len(left)
    for b in right:
        total += n - bisect_right(left, b)
    return total


def _reverse_crossings(left: list[int], right: list[int]) -> int:
    """Pairs a in left, b in right with a < b: the crossings once the two are swapped."""
    if not left or not right:
        return 0
    total = 0
    for b in right:
        total += bisect_left(left, b)
    return total


def transpose(
    layer_nodes: list[np.ndarray],
    pos: np.ndarray,
    seg_upper: np.ndarray,
    seg_lower: np.ndarray,
    comp: np.ndarray,
    max_passes: int = 4,
    ties: bool = False,
) -> np.ndarray:
    """Positions after greedy adjacent swaps (see the module docstring)."""
    n = len(pos)
    p = pos.tolist()
    ups: list[list[int]] = [[] for _ in range(n)]
    downs: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(seg_upper.tolist(), seg_lower.tolist(), strict=True):
        downs[u].append(v)
        ups[v].append(u)
    order = [sorted(m.tolist(), key=p.__getitem__) for m in layer_nodes]
    cmp = comp.tolist()
    dirty = [True] * len(order)
    for _ in range(max_passes):
        improved = False
        for r, layer in enumerate(order):
            if not dirty[r] or len(layer) < 2:
                continue
            dirty[r] = False
            # neighbour positions, sorted, for the nodes of this layer
            up_pos = {v: sorted(p[u] for u in ups[v]) for v in layer}
            down_pos = {v: sorted(p[w] for w in downs[v]) for v in layer}
            for i in range(len(layer) - 1):
                v, w = layer[i], layer[i + 1]
                if cmp[v] != cmp[w]:
                    continue
                now = _crossings(up_pos[v], up_pos[w]) + _crossings(down_pos[v], down_pos[w])
                if now == 0:
                    continue
                swapped = _reverse_crossings(up_pos[v], up_pos[w]) + _reverse_crossings(
                    down_pos[v], down_pos[w]
                )
                if swapped < now or (ties and swapped == now):
                    layer[i], layer[i + 1] = w, v
                    p[v], p[w] = p[w], p[v]
                    improved = True
                    if r > 0:
                        dirty[r - 1] = True
                    if r + 1 < len(order):
                        dirty[r + 1] = True
        if not improved:
            break
    return np.asarray(p, dtype=_I)
