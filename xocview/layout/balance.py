"""Phase 4b, balancing: pull each node towards its neighbours without breaking the layer order.

Before: x from Brandes-Köpf, the final order in every layer, required gaps.
After: x where each node sits near the weighted mean of its neighbours' x (long-edge
segments weigh most, so dummy chains stay straight), every layer still in order with its
gaps. Each layer is one weighted isotonic regression (pool adjacent violators), solved
exactly; sweeps alternate down and up. This is what pulls a lone weight next to its
consumer after BK's packing left it at the edge of the drawing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["balance", "isotonic"]

_I = np.int64
# Segment weights as in dot: real-real 1, real-dummy 2, dummy-dummy 8.
_W_REAL, _W_MIXED, _W_DUMMY = 1.0, 2.0, 8.0


def isotonic(target: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Non-decreasing y minimising sum weight * (y - target)^2 (pool adjacent violators)."""
    values: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    for t, w in zip(target.tolist(), weight.tolist(), strict=True):
        values.append(t)
        weights.append(w)
        sizes.append(1)
        while len(values) > 1 and values[-2] > values[-1]:
            w2 = weights.pop()
            v2 = values.pop()
            s2 = sizes.pop()
            w1 = weights[-1]
            total = w1 + w2
            values[-1] = (values[-1] * w1 + v2 * w2) / total
            weights[-1] = total
            sizes[-1] += s2
    return np.repeat(np.asarray(values), np.asarray(sizes, dtype=_I))


def balance(
    x: np.ndarray,
    ordered: list[np.ndarray],
    seg_upper: np.ndarray,
    seg_lower: np.ndarray,
    is_dummy: np.ndarray,
    widths: np.ndarray,
    node_sep: float,
    edge_sep: float,
    sweeps: int = 16,
) -> np.ndarray:
    """x after ``sweeps`` balancing sweeps (see the module docstring)."""
    x = x.astype(np.float64).copy()
    n = len(x)
    if n == 0 or len(seg_upper) == 0:
        return x
    du, dl = is_dummy[seg_upper], is_dummy[seg_lower]
    sw = np.where(du & dl, _W_DUMMY, np.where(du | dl, _W_MIXED, _W_REAL))
    # Both directions of every segment, grouped by the node they pull on.
    a = np.concatenate([seg_upper, seg_lower])
    b = np.concatenate([seg_lower, seg_upper])
    ww = np.concatenate([sw, sw])
    layer_of = np.empty(n, dtype=_I)
    slot = np.empty(n, dtype=_I)
    for r, members in enumerate(ordered):
        layer_of[members] = r
        slot[members] = np.arange(len(members), dtype=_I)
    pull_weight = np.bincount(a, weights=ww, minlength=n)
    by_layer = np.argsort(layer_of[a], kind="stable")
    a, b, ww = a[by_layer], b[by_layer], ww[by_layer]
    bounds = np.searchsorted(layer_of[a], np.arange(len(ordered) + 1))
    gaps = []
    for members in ordered:
        wm = widths[members]
        dm = is_dummy[members]
        sep = np.where(dm[:-1] | dm[1:], edge_sep, node_sep)
        gaps.append(np.concatenate([[0.0], np.cumsum((wm[:-1] + wm[1:]) / 2 + sep)]))
    for sweep in range(sweeps):
        layer_seq = range(len(ordered)) if sweep % 2 == 0 else range(len(ordered) - 1, -1, -1)
        for r in layer_seq:
            members = ordered[r]
            if len(members) == 0:
                continue
            lo, hi = bounds[r], bounds[r + 1]
            pulled = np.bincount(
                slot[a[lo:hi]], weights=ww[lo:hi] * x[b[lo:hi]], minlength=len(members)
            )
            pw = pull_weight[members]
            target = np.where(pw > 0, pulled / np.maximum(pw, 1e-12), x[members])
            weight = np.where(pw > 0, pw, 1e-3)
            cum = gaps[r]
            x[members] = isotonic(target - cum, weight) + cum
    return x
