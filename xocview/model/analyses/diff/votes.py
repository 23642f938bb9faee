"""Matching the nodes that no signature told apart, by their matched neighbours.

Each free old node and free new node that stand in the same relation to a matched pair (the
producer of the tensor that a matched reader reads at the same slot; a reader of the tensor
that a matched producer writes at the same output slot) earn a vote. A pair is taken when each
is the other's best (most votes, then the nearest place in topological order). Weights and
graph inputs paired beforehand (``tensor_pairs``) count as matched producers.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.spread import Matching, readers

__all__ = ["mutual_best", "vote"]

_I = np.int64
_FANOUT = 64  # readers of one tensor beyond this cast no votes (a shared mask, a shape)


def vote(
    m: Matching, tensor_pairs: np.ndarray, same_op: bool = True
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate pairs (old, new) and their votes; ``same_op`` keeps pairs of one op type."""
    ua1, ub1, w1 = _as_producers(m)
    ua2, ub2, w2 = _as_readers(m, tensor_pairs)
    ua, ub = np.concatenate([ua1, ua2]), np.concatenate([ub1, ub2])
    w = np.concatenate([w1, w2])
    ok = m.a.takes_part[ua] & m.b.takes_part[ub]
    if same_op:
        ok &= m.a.op[ua] == m.b.op[ub]
    ua, ub, w = ua[ok], ub[ok], w[ok]
    if not len(ua):
        return ua, ub, w
    keys, inverse = np.unique(ua * m.b.n + ub, return_inverse=True)
    score = np.bincount(inverse, weights=w, minlength=len(keys))
    pa, pb = np.divmod(keys, m.b.n)
    return pa, pb, score


def mutual_best(
    m: Matching, pa: np.ndarray, pb: np.ndarray, score: np.ndarray, least: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """The pairs that are each other's best candidate, with at least ``least`` votes."""
    if not len(pa):
        return pa, pb
    far = np.abs(m.a.rank[pa] - m.b.rank[pb])
    best_a = _best(pa, score, far)
    best_b = _best(pb, score, far)
    both = np.intersect1d(best_a, best_b, assume_unique=True)
    both = both[score[both] >= least]
    return pa[both], pb[both]


def _best(owner: np.ndarray, score: np.ndarray, far: np.ndarray) -> np.ndarray:
    """Per owner, the place of its candidate with the most votes, then the nearest; only owners
    whose best is not tied."""
    order = np.lexsort((far, -score, owner))
    o = owner[order]
    first = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
    top = order[first]
    nxt = first + 1
    has_next = nxt < len(order)
    has_next[has_next] = o[nxt[has_next]] == o[first[has_next]]
    tied = np.zeros(len(first), dtype=bool)
    second = order[nxt[has_next]]
    tied[has_next] = (score[second] == score[top[has_next]]) & (far[second] == far[top[has_next]])
    return np.sort(top[~tied])


def _as_producers(m: Matching) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Free producers of what matched readers read, against the producers of what the
    readers' partners read at the same slot."""
    a, b = m.a, m.b
    e, f = a.entries, b.entries
    sel = np.flatnonzero((m.ab[e.owner] >= 0) & (e.producer >= 0))
    sel = sel[m.ab[e.producer[sel]] < 0]
    partner = m.ab[e.owner[sel]]
    slot = e.canon[sel]
    ok = slot < b.n_in[partner]
    sel, partner, slot = sel[ok], partner[ok], slot[ok]
    t = f.canon_tensor[b.in_ptr[partner] + slot]
    ub = b.producer[t]
    ok = (ub >= 0) & (b.prod_slot[t] == e.prod_slot[sel])
    ok[ok] = m.ba[ub[ok]] < 0
    return e.producer[sel[ok]], ub[ok], np.full(int(ok.sum()), 2.0)


def _as_readers(m: Matching, tensor_pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Free readers of what matched producers write (or of paired weights and inputs), against
    the readers of the partner's tensor at the same output slot."""
    a, b = m.a, m.b
    e = a.entries
    sel = np.flatnonzero(m.ab[e.owner] < 0)
    p = e.producer[sel]
    with_p = p >= 0
    partner = np.where(with_p, m.ab[np.maximum(p, 0)], -1)
    ok = with_p & (partner >= 0)
    ok[ok] = e.prod_slot[sel[ok]] < b.n_out[partner[ok]]
    t_b = np.full(len(sel), -1, dtype=_I)
    t_b[ok] = b.out_tensor[b.out_ptr[partner[ok]] + e.prod_slot[sel[ok]]]
    no_p = ~with_p
    t_b[no_p] = tensor_pairs[e.tensor[sel[no_p]]]
    keep = t_b >= 0
    sel, t_b = sel[keep], t_b[keep]
    # each (old entry, new tensor) against every free reader of the new tensor
    eb, row = readers(b, t_b, most=_FANOUT)
    ua = e.owner[sel[row]]
    ub = b.entries.owner[eb]
    ok = m.ba[ub] < 0
    same_slot = b.entries.key_slot[eb] == e.key_slot[sel[row]]
    return ua[ok], ub[ok], np.where(same_slot[ok], 2.0, 1.0)
