"""Which tensor of the old graph is which of the new, once the nodes are matched.

A tensor with a producer is its matched producer's output at the same slot, whatever its name:
that is how a renamed tensor is found. A tensor left over (a graph input, a weight, the output
of a node only one side has) is the one with its id, else, for one without a producer, the one
that its matched readers read at the same slot on the other side (most of them agreeing).
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.sides import Side

__all__ = ["match_tensors"]

_I = np.int64


def match_tensors(a: Side, b: Side, ab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Old tensor position -> new one and back (-1: none), given the node map ``ab``."""
    n_a, n_b = len(a.graph.tensors), len(b.graph.tensors)
    tab = np.full(n_a, -1, dtype=_I)
    tba = np.full(n_b, -1, dtype=_I)
    _by_producers(a, b, ab, tab, tba)
    free_a, free_b = np.flatnonzero(tab < 0), np.flatnonzero(tba < 0)
    code_b = {c: t for t, c in zip(free_b.tolist(), b.tensor_ident[free_b].tolist(), strict=True)}
    for t, c in zip(free_a.tolist(), a.tensor_ident[free_a].tolist(), strict=True):
        u = code_b.pop(c, None)
        if u is not None:
            tab[t], tba[u] = u, t
    _by_readers(a, b, ab, tab, tba)
    return tab, tba


def _by_producers(a: Side, b: Side, ab: np.ndarray, tab: np.ndarray, tba: np.ndarray) -> None:
    n_a, n_b = len(tab), len(tba)
    owner = np.repeat(np.arange(a.n, dtype=_I), a.n_out)
    slot = np.arange(len(owner), dtype=_I) - a.out_ptr[owner]
    partner = ab[owner]
    ok = partner >= 0
    ok[ok] = slot[ok] < b.n_out[partner[ok]]
    ta = a.out_tensor[ok]
    tb = b.out_tensor[b.out_ptr[partner[ok]] + slot[ok]]
    keep = (ta < n_a) & (tb < n_b)
    ta, tb = ta[keep], tb[keep]
    keep = (a.producer[ta] == owner[ok][keep]) & (b.producer[tb] == partner[ok][keep])
    ta, tb = ta[keep], tb[keep]
    _, first = np.unique(tb, return_index=True)  # a file with two producers of one tensor
    ta, tb = ta[first], tb[first]
    tab[ta], tba[tb] = tb, ta


def _by_readers(a: Side, b: Side, ab: np.ndarray, tab: np.ndarray, tba: np.ndarray) -> None:
    """Producer-less tensors still free, by the slots their matched readers read."""
    n_a, n_b = len(tab), len(tba)
    e = a.entries
    ok = (e.tensor < n_a) & (ab[e.owner] >= 0)
    ok[ok] = (tab[e.tensor[ok]] < 0) & (a.producer[e.tensor[ok]] < 0)
    sel = np.flatnonzero(ok)
    partner = ab[e.owner[sel]]
    good = e.canon[sel] < b.n_in[partner]
    sel, partner = sel[good], partner[good]
    tb = b.entries.canon_tensor[b.in_ptr[partner] + e.canon[sel]]
    good = tb < n_b
    good[good] = (tba[tb[good]] < 0) & (b.producer[tb[good]] < 0)
    ta, tb = e.tensor[sel[good]], tb[good]
    if not len(ta):
        return
    keys, count = np.unique(ta * n_b + tb, return_counts=True)
    pa, pb = np.divmod(keys, n_b)
    best_a = _best(pa, count)
    best_b = _best(pb, count)
    both = np.intersect1d(best_a, best_b, assume_unique=True)
    tab[pa[both]], tba[pb[both]] = pb[both], pa[both]


def _best(owner: np.ndarray, count: np.ndarray) -> np.ndarray:
    """Per owner, the place of its most-voted candidate; owners with a tie get none."""
    order = np.lexsort((-count, owner))
    o, c = owner[order], count[order]
    first = np.flatnonzero(np.r_[True, o[1:] != o[:-1]])
    nxt = first + 1
    tied = np.zeros(len(first), dtype=bool)
    has = nxt < len(o)
    has[has] = o[nxt[has]] == o[first[has]]
    tied[has] = c[nxt[has]] == c[first[has]]
    return np.sort(order[first[~tied]])
