"""Phase 3, crossing reduction: the order of the nodes within each layer.

Before: a proper layered graph (segments join adjacent layers), components labelled.
After: ``pos[v]``, each node's index within its layer, with few crossings.

Layer-by-layer sweeps, down then up, sort each layer by the median position of its
neighbours in the layer just fixed (Gansner et al.); a node without neighbours there keeps its
place. Each sweep is vectorised within a layer. The ordering with the fewest crossings over
all sweeps wins. Components never interleave: the sort key starts with the component.
With an order hint (the previous layout's x of the real nodes), hinted nodes keep their
relative order and only the others are placed, by the median of their neighbours.
"""

from __future__ import annotations

import numpy as np

from xocview.layout.cross_count import count_crossings
from xocview.layout.normalize import Layered
from xocview.layout.transpose import Adjacency, transpose

__all__ = ["Layers", "order_layers"]

_I = np.int64
_MAX_SWEEPS = 24
_PATIENCE = 6
_SMALL = 12  # layers with fewer nodes are sorted in plain Python (array calls cost more)


class Layers:
    """Static per-layer bookkeeping: the node set of each layer and the segments around it."""

    def __init__(self, lg: Layered, comp: np.ndarray) -> None:
        rank = lg.rank
        self.count = int(rank.max()) + 1 if len(rank) else 0
        by_rank = np.argsort(rank, kind="stable")
        bounds = np.searchsorted(rank[by_rank], np.arange(self.count + 1))
        self.nodes = [by_rank[bounds[r] : bounds[r + 1]] for r in range(self.count)]
        self.slot = np.empty(len(rank), dtype=_I)
        for members in self.nodes:
            self.slot[members] = np.arange(len(members), dtype=_I)
        self.comp = comp
        su, sl = lg.seg_src, lg.seg_dst
        upper_rank = rank[su]
        seg_by_layer = np.argsort(upper_rank, kind="stable")
        sb = np.searchsorted(upper_rank[seg_by_layer], np.arange(self.count + 1))
        # below[r]: segments from layer r to r + 1, as (upper node, lower node)
        self.below = [
            (su[seg_by_layer[sb[r] : sb[r + 1]]], sl[seg_by_layer[sb[r] : sb[r + 1]]])
            for r in range(self.count)
        ]
        self.seg_upper, self.seg_lower, self.seg_layer = su, sl, upper_rank
        self._plans: dict[tuple[int, bool], _MedianPlan] = {}
        self._small: dict[tuple[int, bool], _SmallPlan] = {}

    def plan(self, r: int, down: bool) -> _MedianPlan:
        """What sorting layer ``r`` against its upper (``down``) or lower neighbour layer needs
        that the positions do not change, made on first use."""
        got = self._plans.get((r, down))
        if got is None:
            got = self._plans[(r, down)] = _MedianPlan(self, r, down)
        return got

    def small(self, r: int, down: bool) -> _SmallPlan:
        """``plan`` as Python lists, for a layer with few nodes."""
        got = self._small.get((r, down))
        if got is None:
            got = self._small[(r, down)] = _SmallPlan(self.plan(r, down))
        return got

    def crossings(self, pos: np.ndarray) -> int:
        return count_crossings(self.seg_upper, self.seg_lower, self.seg_layer, pos)


def order_layers(lg: Layered, comp: np.ndarray, hint: np.ndarray | None = None) -> np.ndarray:
    """Positions within layers (see the module docstring)."""
    layers = Layers(lg, comp)
    pos = np.zeros(lg.num_nodes, dtype=_I)
    if layers.count == 0:
        return pos
    if hint is not None:
        return _hinted(lg, layers, hint)
    pos = _dfs_order(lg, layers)
    adjacency = Adjacency(lg.num_nodes, lg.seg_src, lg.seg_dst)
    swap_group = comp  # nodes swap only with neighbours of their own component
    best, best_cross = pos.copy(), layers.crossings(pos)
    stale = 0
    # A layer sorted against a neighbour comes out the same while neither has changed since:
    # such sorts are skipped (most layers of a deep graph settle after a few sweeps).
    version = [0] * layers.count
    sorted_at: dict[tuple[int, bool], tuple[int, int]] = {}
    for sweep in range(_MAX_SWEEPS):
        if best_cross == 0:
            break
        down = sweep % 2 == 0
        rng = range(1, layers.count) if down else range(layers.count - 2, -1, -1)
        mirror = pos.tolist()  # what small layers read and write, in step with pos
        for r in rng:
            fixed = r - 1 if down else r + 1
            seen = (version[r], version[fixed])
            if sorted_at.get((r, down)) == seen:
                continue
            if len(layers.nodes[r]) < _SMALL:
                changed = _sort_small(layers.small(r, down), pos, mirror)
            else:
                changed = _sort_layer(layers, pos, r, down)
                if changed:
                    members = layers.nodes[r]
                    for v, p in zip(members.tolist(), pos[members].tolist(), strict=True):
                        mirror[v] = p
            if changed:
                version[r] += 1
            sorted_at[(r, down)] = (version[r], version[fixed])
        before = pos
        pos = transpose(pos, lg.rank, swap_group, adjacency, max_passes=3, ties=sweep % 4 >= 2)
        for r in np.unique(lg.rank[pos != before]).tolist():
            version[r] += 1
        cross = layers.crossings(pos)
        if cross < best_cross:
            best, best_cross, stale = pos.copy(), cross, 0
        else:
            stale += 1
            if stale >= _PATIENCE:
                break
    return best


def _dfs_order(lg: Layered, layers: Layers) -> np.ndarray:
    """Initial order: depth-first from each node in layer order, appending to its layer.

    Nodes reached along one path end up side by side, which gives the sweeps a start with
    the graph's own nesting (dagre and dot start alike); components stay apart.
    """
    n = lg.num_nodes
    succ: list[list[int]] = [[] for _ in range(n)]
    for u, v in zip(lg.seg_src.tolist(), lg.seg_dst.tolist(), strict=True):
        succ[u].append(v)
    rank = lg.rank.tolist()
    comp = layers.comp
    start = np.lexsort((np.arange(n), lg.rank, comp)).tolist()
    fill = [0] * layers.count
    pos = [0] * n
    seen = [False] * n
    for s in start:
        if seen[s]:
            continue
        stack = [s]
        seen[s] = True
        while stack:
            v = stack.pop()
            pos[v] = fill[rank[v]]
            fill[rank[v]] += 1
            for w in reversed(succ[v]):
                if not seen[w]:
                    seen[w] = True
                    stack.append(w)
    return np.asarray(pos, dtype=_I)


class _MedianPlan:
    """The fixed part of sorting one layer against one neighbour layer.

    The segments to the fixed layer are grouped by the slot of their end in this layer, so the
    neighbours' positions of every node come out sorted from one sort of ``base + position``:
    groups are contiguous and ``base`` (slot times a bound on positions) keeps them apart.
    """

    def __init__(self, layers: Layers, r: int, down: bool) -> None:
        members = layers.nodes[r]
        mine, other = layers.below[r - 1][::-1] if down else layers.below[r]
        k = len(members)
        slot = layers.slot[mine]
        by_slot = np.argsort(slot, kind="stable")
        self.other = other[by_slot]
        self.slot_of_other = slot[by_slot]
        fixed = r - 1 if down else r + 1  # the neighbour layer; positions there are below bound
        bound = len(layers.nodes[fixed]) if 0 <= fixed < layers.count else 1
        self.base = slot[by_slot] * bound
        counts = np.bincount(slot, minlength=k)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(_I)
        self.has = counts > 0
        self.none = ~self.has if not self.has.all() else None
        self.lo = starts[self.has] + (counts[self.has] - 1) // 2
        self.hi = starts[self.has] + counts[self.has] // 2
        # Gansner's weighted median for even counts above two (see _neighbour_medians).
        even = self.has & (counts > 2) & (counts % 2 == 0)
        self.even = even if even.any() else None
        self.even_first = starts[even]
        self.even_count = counts[even]
        self.members = members
        comp = layers.comp[members]
        self.comp = comp if k and (comp != comp[0]).any() else None  # one component: no key
        self.slots = np.arange(k, dtype=_I)


class _SmallPlan:
    """A median plan as lists: each member's neighbours on the fixed layer, and its component."""

    def __init__(self, plan: _MedianPlan) -> None:
        self.members_array = plan.members
        self.members: list[int] = plan.members.tolist()
        self.neighbours: list[list[int]] = [[] for _ in self.members]
        for v, sl in zip(plan.other.tolist(), plan.slot_of_other.tolist(), strict=True):
            self.neighbours[sl].append(v)
        self.comp: list[int] | None = None if plan.comp is None else plan.comp.tolist()
        self.slots = plan.slots


def _sort_small(plan: _SmallPlan, pos: np.ndarray, mirror: list[int]) -> bool:
    """``_sort_layer`` in plain Python: the same keys and the same tie-breaks."""
    members = plan.members
    current = [mirror[v] for v in members]
    keys: list[float | None] = []
    for nb in plan.neighbours:
        c = len(nb)
        if c == 1:
            keys.append(mirror[nb[0]])
        elif c == 2:
            keys.append((mirror[nb[0]] + mirror[nb[1]]) / 2)
        elif c == 0:
            keys.append(None)
        else:
            ps = sorted([mirror[v] for v in nb])
            mid_lo, mid_hi = ps[(c - 1) // 2], ps[c // 2]
            med = (mid_lo + mid_hi) / 2
            if c % 2 == 0:  # Gansner's weighted median (see _neighbour_medians)
                left, right = mid_lo - ps[0], ps[-1] - mid_hi
                if left + right > 0:
                    med = (mid_lo * right + mid_hi * left) / (left + right)
            keys.append(med)
    if None in keys:  # key-less nodes keep their place: the key of the node before them
        last: float = -1.0
        for i in sorted(range(len(members)), key=current.__getitem__):
            got = keys[i]
            if got is None:
                keys[i] = last
            else:
                last = got
    index = range(len(members))
    if plan.comp is None:
        order = [t[-1] for t in sorted(zip(keys, current, index, strict=True))]
    else:
        order = [t[-1] for t in sorted(zip(plan.comp, keys, current, index, strict=True))]
    if all(current[i] == k for k, i in enumerate(order)):
        return False
    for k, i in enumerate(order):
        mirror[members[i]] = k
    pos[plan.members_array[order]] = plan.slots
    return True


def _neighbour_medians(plan: _MedianPlan, pos: np.ndarray) -> np.ndarray:
    """Median position of each node's neighbours on the fixed layer (0 where it has none)."""
    sorted_pos = np.sort(plan.base + pos[plan.other]) - plan.base
    med = np.zeros(len(plan.members))
    med[plan.has] = (sorted_pos[plan.lo] + sorted_pos[plan.hi]) / 2
    # Gansner's weighted median for even counts above two: lean towards the side whose
    # neighbours are packed closer together.
    if plan.even is not None:
        s0, c = plan.even_first, plan.even_count
        first, last = sorted_pos[s0], sorted_pos[s0 + c - 1]
        mid_lo, mid_hi = sorted_pos[s0 + c // 2 - 1], sorted_pos[s0 + c // 2]
        left, right = mid_lo - first, last - mid_hi
        total = left + right
        med[plan.even] = np.where(
            total > 0,
            (mid_lo * right + mid_hi * left) / np.maximum(total, 1e-12),
            (mid_lo + mid_hi) / 2,
        )
    return med


def _sort_layer(layers: Layers, pos: np.ndarray, r: int, down: bool) -> bool:
    """Sort layer ``r`` by its neighbours' medians; True when its order changed."""
    members = layers.nodes[r]
    if len(members) < 2:
        return False
    plan = layers.plan(r, down)
    key = _neighbour_medians(plan, pos)
    current = pos[members].astype(np.float64)
    # A node without neighbours on the fixed side keeps its place among the others.
    if plan.none is not None:
        key[plan.none] = np.nan
        key = _fill_in_place(key, current)
    if plan.comp is None:
        order = np.lexsort((current, key))
    else:
        order = np.lexsort((current, key, plan.comp))
    if (current[order] == plan.slots).all():
        return False
    pos[members[order]] = plan.slots
    return True


def _fill_in_place(key: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Give key-less nodes the key of the node just before them in the current order."""
    if not np.isnan(key).any():
        return key
    order = np.argsort(current, kind="stable")
    k = key[order]
    valid = ~np.isnan(k)
    idx = np.where(valid, np.arange(len(k)), -1)
    np.maximum.accumulate(idx, out=idx)
    filled = np.where(idx >= 0, k[np.maximum(idx, 0)], -1.0)
    out = np.empty_like(key)
    out[order] = filled
    return out


def _hinted(lg: Layered, layers: Layers, hint: np.ndarray) -> np.ndarray:
    """Order by the hint; unhinted nodes (new ones, dummies) by their neighbours' keys.

    Dummies take keys interpolated between their chain's ends; a new real node takes the
    mean key of its neighbours, or its layer's mean. All vectorised: a relayout after
    collapse/expand must cost far less than a full layout.
    """
    n = lg.num_real
    key = np.full(lg.num_nodes, np.nan)
    key[:n] = hint[:n]
    ps, pd = lg.pair_src, lg.pair_dst
    # a new real node: mean key of its hinted neighbours
    new = np.isnan(key[:n])
    if new.any() and len(ps):
        ends = np.concatenate([ps, pd])
        other = np.concatenate([pd, ps])
        known = ~np.isnan(key[other]) & new[ends]
        total = np.bincount(ends[known], weights=key[other[known]], minlength=n)
        count = np.bincount(ends[known], minlength=n)
        fill = new & (count > 0)
        key[:n][fill] = total[fill] / count[fill]
    if len(ps):
        length = np.diff(lg.chain_ptr)
        k = np.repeat(np.arange(len(ps), dtype=_I), length)
        step = np.arange(len(lg.chain_nodes), dtype=_I) - lg.chain_ptr[k]
        inner = (step > 0) & (step < length[k] - 1)
        ks, kd = key[ps], key[pd]
        ks, kd = np.where(np.isnan(ks), kd, ks), np.where(np.isnan(kd), ks, kd)
        t = step[inner] / (length[k[inner]] - 1)
        key[lg.chain_nodes[inner]] = ks[k[inner]] + (kd[k[inner]] - ks[k[inner]]) * t
    rank = lg.rank
    missing = np.isnan(key)
    if missing.any():
        sums = np.bincount(rank[~missing], weights=key[~missing], minlength=layers.count)
        cnt = np.bincount(rank[~missing], minlength=layers.count)
        key[missing] = np.where(
            cnt[rank[missing]] > 0, sums[rank[missing]] / np.maximum(cnt[rank[missing]], 1), 0.0
        )
    order = np.lexsort((np.arange(lg.num_nodes), key, layers.comp, rank))
    starts = np.searchsorted(rank[order], np.arange(layers.count))
    pos = np.empty(lg.num_nodes, dtype=_I)
    pos[order] = np.arange(lg.num_nodes, dtype=_I) - starts[rank[order]]
    return pos
