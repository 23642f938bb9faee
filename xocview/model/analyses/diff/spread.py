"""Growing a node matching along the graph: from matched nodes to the tensors at the same
slots, and from matched tensors to their producers and readers.

``Matching`` holds the two maps (old position -> new position and back, -1 where none) and
takes candidate pairs in bulk: a pair is taken when both nodes are free, take part in
structural matching, and neither is proposed with another partner in the same batch. Each
batch is a handful of numpy passes; ``spread`` repeats them from the newly matched pairs until
nothing new comes, so a run costs in proportion to the edges it crosses.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.sides import Side
from xocview.model.analyses.diff.signatures import combine

__all__ = ["Matching", "join_unique", "readers", "slotwise"]

_I = np.int64
_EMPTY = np.zeros(0, dtype=_I)


def join_unique(key_a: np.ndarray, key_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Places in ``key_a`` and ``key_b`` of the keys that occur exactly once on each side."""
    ua, ia, ca = np.unique(key_a, return_index=True, return_counts=True)
    ub, ib, cb = np.unique(key_b, return_index=True, return_counts=True)
    sa, sb = ca == 1, cb == 1
    _, x, y = np.intersect1d(ua[sa], ub[sb], assume_unique=True, return_indices=True)
    return ia[sa][x], ib[sb][y]


def slotwise(
    ptr_a: np.ndarray,
    flat_a: np.ndarray,
    pa: np.ndarray,
    ptr_b: np.ndarray,
    flat_b: np.ndarray,
    pb: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """For rows ``pa`` of one CSR and ``pb`` of another, the values at equal places, as far as
    the shorter row of each pair goes (slot k of a node against slot k of its partner)."""
    m = np.minimum(ptr_a[pa + 1] - ptr_a[pa], ptr_b[pb + 1] - ptr_b[pb])
    if not len(m):
        return _EMPTY, _EMPTY
    row = np.repeat(np.arange(len(pa), dtype=_I), m)
    place = np.arange(len(row), dtype=_I) - np.repeat(np.cumsum(m) - m, m)
    return flat_a[ptr_a[pa][row] + place], flat_b[ptr_b[pb][row] + place]


def readers(
    side: Side, tensors: np.ndarray, most: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The input entries reading each of ``tensors``, and for each the place in ``tensors`` it
    came from; tensors with more than ``most`` readers are left out."""
    e = side.entries
    start, stop = e.tensor_ptr[tensors], e.tensor_ptr[tensors + 1]
    count = stop - start
    if most is not None:
        count = np.where(count > most, 0, count)
    row = np.repeat(np.arange(len(tensors), dtype=_I), count)
    place = np.arange(len(row), dtype=_I) - np.repeat(np.cumsum(count) - count, count)
    return e.by_tensor[start[row] + place], row


class Matching:
    """The node maps between two sides and the bulk steps that grow them.

    ``labels_a``/``labels_b`` are structural labels (a refinement level) used to tell apart
    readers of one tensor that share an op type.
    """

    def __init__(self, a: Side, b: Side, labels_a: np.ndarray, labels_b: np.ndarray) -> None:
        self.a, self.b = a, b
        self.ab = np.full(a.n, -1, dtype=_I)
        self.ba = np.full(b.n, -1, dtype=_I)
        self.labels_a, self.labels_b = labels_a, labels_b
        # A tensor's readers are looked at once: a tensor read by thousands is not re-read.
        self._seen_a = np.zeros(len(a.producer), dtype=bool)
        self._seen_b = np.zeros(len(b.producer), dtype=bool)
        self._seen_a[-1] = self._seen_b[-1] = True  # the anonymous tensor joins nothing

    def free_a(self) -> np.ndarray:
        return np.flatnonzero((self.ab < 0) & self.a.takes_part)

    def free_b(self) -> np.ndarray:
        return np.flatnonzero((self.ba < 0) & self.b.takes_part)

    def take(self, pa: np.ndarray, pb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Match the pairs that are free and unopposed; returns the pairs taken."""
        ok = (self.ab[pa] < 0) & (self.ba[pb] < 0) & self.a.takes_part[pa] & self.b.takes_part[pb]
        pa, pb = pa[ok], pb[ok]
        if not len(pa):
            return _EMPTY, _EMPTY
        pa, pb = np.divmod(np.unique(pa * self.b.n + pb), self.b.n)
        ua, ca = np.unique(pa, return_counts=True)
        ub, cb = np.unique(pb, return_counts=True)
        keep = ~np.isin(pa, ua[ca > 1]) & ~np.isin(pb, ub[cb > 1])
        pa, pb = pa[keep], pb[keep]
        self.ab[pa], self.ba[pb] = pb, pa
        return pa, pb

    def spread(
        self,
        pa: np.ndarray,
        pb: np.ndarray,
        ta: np.ndarray = _EMPTY,
        tb: np.ndarray = _EMPTY,
        *,
        taken: bool = False,
    ) -> int:
        """Take the node pairs (pa, pb) (already ``taken``: follow them only), then follow
        tensor pairs (ta, tb) and the tensors of every pair taken, until nothing new comes;
        returns how many pairs were taken."""
        if not taken:
            pa, pb = self.take(pa, pb)
        count = len(pa)
        while len(pa) or len(ta):
            a, b = self.a, self.b
            oa, ob = slotwise(a.out_ptr, a.out_tensor, pa, b.out_ptr, b.out_tensor, pb)
            ia, ib = slotwise(
                a.in_ptr, a.entries.canon_tensor, pa, b.in_ptr, b.entries.canon_tensor, pb
            )
            na, nb = self._neighbours(np.concatenate([ta, oa, ia]), np.concatenate([tb, ob, ib]))
            pa, pb = self.take(na, nb)
            ta = tb = _EMPTY
            count += len(pa)
        return count

    def _neighbours(self, ta: np.ndarray, tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidate node pairs around tensor pairs: their producers (same op type, same output
        slot) and their readers that are alone in reading it with their op type and slot."""
        ok = ~self._seen_a[ta] & ~self._seen_b[tb]
        ta, tb = ta[ok], tb[ok]
        _, first = np.unique(ta, return_index=True)
        ta, tb = ta[first], tb[first]
        _, first = np.unique(tb, return_index=True)
        ta, tb = ta[first], tb[first]
        self._seen_a[ta] = self._seen_b[tb] = True
        a, b = self.a, self.b
        pa, pb = a.producer[ta], b.producer[tb]
        ok = (pa >= 0) & (pb >= 0)
        pa, pb, ta_p, tb_p = pa[ok], pb[ok], ta[ok], tb[ok]
        ok = (a.op[pa] == b.op[pb]) & (a.prod_slot[ta_p] == b.prod_slot[tb_p])
        ra, rb = self._readers(ta, tb)
        return np.concatenate([pa[ok], ra]), np.concatenate([pb[ok], rb])

    def _readers(self, ta: np.ndarray, tb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.a, self.b
        ea, ka = readers(a, ta)
        eb, kb = readers(b, tb)
        free_a, free_b = self.ab[a.entries.owner[ea]] < 0, self.ba[b.entries.owner[eb]] < 0
        ea, ka, eb, kb = ea[free_a], ka[free_a], eb[free_b], kb[free_b]
        ca, cb = a.entries.owner[ea], b.entries.owner[eb]
        sa, sb = a.entries.key_slot[ea], b.entries.key_slot[eb]
        i1, j1 = join_unique(combine(ka, a.op[ca], sa), combine(kb, b.op[cb], sb))
        i2, j2 = join_unique(combine(ka, self.labels_a[ca], sa), combine(kb, self.labels_b[cb], sb))
        return np.concatenate([ca[i1], ca[i2]]), np.concatenate([cb[j1], cb[j2]])
