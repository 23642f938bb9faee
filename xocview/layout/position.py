"""Phase 4, coordinate assignment: x by balancing, y by layer.

Before: the final order in every layer, node widths, required gaps.
After: x where each node sits near the weighted mean of its neighbours' x (long-edge
segments weigh most, so dummy chains stay straight), every layer still in order with its
gaps. Each layer is one weighted isotonic regression (pool adjacent violators), solved
exactly; sweeps solve all even layers, then all odd ones, from every layer packed and
centred, until nothing moves.

Brandes-Köpf with a plain longest-path compaction was tried first: its packing
leans each block on whatever sits to its left, and over hundreds of layers the drawing drifts
into a staircase (densenet121: 27,800 px wide against 730 px from this start), so it was
replaced by this. y: each layer as tall as its tallest node, layers ``rank_sep`` apart.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "balance",
    "centered_layers",
    "isotonic",
    "isotonic_groups",
    "layer_offsets",
    "layer_sequence",
    "layer_y",
    "leaves",
]

_I = np.int64
# Segment weights as in dot: real-real 1, real-dummy 2, dummy-dummy 8.
_W_REAL, _W_MIXED, _W_DUMMY = 1.0, 2.0, 8.0
_W_LEAF = 1e-3  # a weight's segment to the node it feeds
_SWEEPS = 24  # at most; they stop when nothing moves by _STILL px
_STILL = 0.5
_POOL_PASSES = 32  # vectorised pooling passes before the rest is pooled in Python


def isotonic(target: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Non-decreasing y minimising sum weight * (y - target)^2 (pool adjacent violators)."""
    return isotonic_groups(target, weight, np.zeros(len(target), dtype=_I))


def isotonic_groups(target: np.ndarray, weight: np.ndarray, group: np.ndarray) -> np.ndarray:
    """``isotonic`` of every run of equal ``group`` ids at once (ids non-decreasing).

    Pooling two adjacent violators is always part of the solution, and so is pooling a whole
    decreasing run of blocks (the pooled mean stays above the next block's), so each pass
    pools every decreasing run of every group in a few array operations. Targets that need
    many passes (a long rise before a deep drop) finish block by block in Python.
    """
    n = len(target)
    if n < 2:
        return np.asarray(target, dtype=np.float64).copy()
    wsum = np.asarray(weight, dtype=np.float64).copy()
    vsum = np.asarray(target, dtype=np.float64) * wsum
    size = np.ones(n, dtype=_I)
    bgroup = np.asarray(group)
    for _ in range(_POOL_PASSES):
        mean = vsum / wsum
        viol = (mean[:-1] > mean[1:]) & (bgroup[:-1] == bgroup[1:])
        if not viol.any():
            return np.repeat(mean, size)
        keep = np.ones(len(mean), dtype=bool)
        keep[1:] = ~viol
        block = np.cumsum(keep) - 1
        m = int(block[-1]) + 1
        wsum = np.bincount(block, weights=wsum, minlength=m)
        vsum = np.bincount(block, weights=vsum, minlength=m)
        size = np.bincount(block, weights=size, minlength=m).astype(_I)
        bgroup = bgroup[keep]
    return np.repeat(*_pool_rest(vsum / wsum, wsum, size, bgroup))


def _pool_rest(
    mean: np.ndarray, wsum: np.ndarray, size: np.ndarray, group: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Pool adjacent violators block by block (blocks already pooled stay pooled)."""
    values: list[float] = []
    weights: list[float] = []
    sizes: list[int] = []
    groups: list[int] = []
    for v, w, s, g in zip(mean.tolist(), wsum.tolist(), size.tolist(), group.tolist(), strict=True):
        values.append(v)
        weights.append(w)
        sizes.append(s)
        groups.append(g)
        while len(values) > 1 and groups[-2] == groups[-1] and values[-2] > values[-1]:
            w2 = weights.pop()
            v2 = values.pop()
            s2 = sizes.pop()
            groups.pop()
            w1 = weights[-1]
            total = w1 + w2
            values[-1] = (values[-1] * w1 + v2 * w2) / total
            weights[-1] = total
            sizes[-1] += s2
    return np.asarray(values), np.asarray(sizes, dtype=_I)


def layer_sequence(rank: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All nodes layer by layer, each layer in its order, and the mask of each layer's first."""
    seq = np.lexsort((pos, rank))
    first = np.ones(len(seq), dtype=bool)
    first[1:] = rank[seq[1:]] != rank[seq[:-1]]
    return seq, first


def layer_offsets(
    seq: np.ndarray,
    first: np.ndarray,
    is_dummy: np.ndarray,
    widths: np.ndarray,
    node_sep: float,
    edge_sep: float,
) -> np.ndarray:
    """Offset of every node of ``seq`` from its layer's first node, each layer packed left to
    right with its gaps (``first`` marks where a layer starts in ``seq``)."""
    if not len(seq):
        return np.zeros(0)
    wm = widths[seq]
    dm = is_dummy[seq]
    step = np.zeros(len(seq))
    step[1:] = (wm[:-1] + wm[1:]) / 2 + np.where(dm[:-1] | dm[1:], edge_sep, node_sep)
    step[first] = 0.0
    total = np.cumsum(step)
    return total - np.maximum.accumulate(np.where(first, total, -np.inf))


def leaves(
    n: int, seg_upper: np.ndarray, seg_lower: np.ndarray, is_dummy: np.ndarray
) -> np.ndarray:
    """Sources that feed one segment: a weight or a constant beside the layer it feeds."""
    fan_in = np.bincount(seg_lower, minlength=n)
    fan_out = np.bincount(seg_upper, minlength=n)
    return (fan_in == 0) & (fan_out == 1) & ~is_dummy


def centered_layers(
    seq: np.ndarray, first: np.ndarray, off: np.ndarray, leaf: np.ndarray | None = None
) -> np.ndarray:
    """Every layer packed (``off``: ``layer_offsets``) and centred on x = 0: a start that
    leans nowhere. A layer with nodes other than ``leaf`` ones centres those, so that a spine
    whose layers have weights beside them starts straight.
    """
    x = np.zeros(len(seq))
    if not len(seq):
        return x
    layer = np.cumsum(first) - 1
    count = int(layer[-1]) + 1
    last = np.append(np.flatnonzero(first)[1:] - 1, len(seq) - 1)
    centre = off[last] / 2
    if leaf is not None:
        core = ~leaf[seq]
        total = np.bincount(layer[core], weights=off[core], minlength=count)
        many = np.bincount(layer[core], minlength=count)
        centre = np.where(many > 0, total / np.maximum(many, 1), centre)
    x[seq] = off - centre[layer]
    return x


def balance(
    x: np.ndarray,
    seq: np.ndarray,
    first: np.ndarray,
    rank: np.ndarray,
    seg_upper: np.ndarray,
    seg_lower: np.ndarray,
    is_dummy: np.ndarray,
    cum: np.ndarray,
    leaf: np.ndarray,
    sweeps: int = _SWEEPS,
) -> np.ndarray:
    """x after balancing sweeps (see the module docstring); ``cum`` is ``layer_offsets``,
    ``leaf`` the ``leaves`` mask.

    Segments join adjacent layers only, so all even layers are solved at once against the
    odd ones, then all odd layers (red-black Gauss-Seidel): a sweep is a handful of array
    operations whatever the number of layers. Sweeps stop once no node moves by a pixel.
    """
    x = x.astype(np.float64).copy()
    n = len(x)
    if n == 0 or len(seg_upper) == 0:
        return x
    du, dl = is_dummy[seg_upper], is_dummy[seg_lower]
    sw = np.where(du & dl, _W_DUMMY, np.where(du | dl, _W_MIXED, _W_REAL))
    # Both directions of every segment: a pulls on b's x with weight ww.
    a = np.concatenate([seg_upper, seg_lower])
    b = np.concatenate([seg_lower, seg_upper])
    ww = np.concatenate([sw, sw])
    # A weight or constant is tied to the node it feeds by a thread: with equal weights the
    # best drawing of a spine with a weight beside every layer is a staircase (half a box a
    # layer, since squares favour two half steps over one whole); the spine stays straight and
    # the weight still sits under its consumer wherever the order leaves it room.
    ww = np.where(leaf[a] | leaf[b], ww * _W_LEAF, ww)
    layer = np.cumsum(first) - 1
    local = np.empty(n, dtype=_I)
    halves = []
    for parity in (0, 1):
        at = np.flatnonzero(rank[seq] % 2 == parity)
        if not len(at):
            continue
        nodes = seq[at]
        local[nodes] = np.arange(len(nodes), dtype=_I)
        mine = rank[a] % 2 == parity
        pa = local[a[mine]]
        pw = np.bincount(pa, weights=ww[mine], minlength=len(nodes))
        pulled = pw > 0
        halves.append(
            (
                nodes,
                layer[at],
                cum[at],
                pa,
                b[mine],
                ww[mine],
                pulled,
                1.0 / np.maximum(pw, 1e-12),
                np.where(pulled, pw, 1e-3),
            )
        )
    for _ in range(sweeps):
        moved = 0.0
        for nodes, group, off, pa, pb, weights, pulled, inverse, weight in halves:
            force = np.bincount(pa, weights=weights * x[pb], minlength=len(nodes))
            before = x[nodes]
            target = np.where(pulled, force * inverse, before)
            after = isotonic_groups(target - off, weight, group) + off
            moved = max(moved, float(np.abs(after - before).max()))
            x[nodes] = after
        if moved < _STILL:
            break
    return x


def layer_y(
    rank: np.ndarray, heights: np.ndarray, count: int, gap: float | np.ndarray
) -> np.ndarray:
    """Centre y of every layer: each layer as tall as its tallest node, ``gap`` after each
    (one value, or one per layer)."""
    tallest = np.zeros(count)
    np.maximum.at(tallest, rank, heights)
    tops = np.concatenate([[0.0], np.cumsum(tallest + gap)[:-1]])
    return tops + tallest / 2
