"""Which node of the old graph is which node of the new one: by id, then by structure.

The steps, each followed by ``Matching.spread`` from what it matched:

1. Same id, same op type, and the same ids around (producers, readers, attributes): exporters
   that keep names keep them here. Nodes named by position (``Conv_12``, given by the loader
   to unnamed ONNX nodes) shift after an edit; their neighbours' ids shift too, so a shifted id
   lands on a node whose surroundings disagree, and is not taken.
   Then nodes whose first outputs have the same tensor id (and the same op type or id).
2. Graph inputs, outputs and weights paired by id (then inputs and outputs by position).
3. Structural labels (``signatures.refine``) unique on both sides, from the widest to the op
   type alone; then labels shared by as many nodes on each side, paired in topological order
   (repeated layers).
4. Same id and op type among the nodes still free.
5. Votes of matched neighbours (``votes``), same op type; then, across op types, the pairs
   whose neighbours agree: an operator replaced in place.

Groups without inputs and outputs (scopes, function calls) are matched last, by id and then by
where their children went. Derived sections take no part.
"""

from __future__ import annotations

import numpy as np

from xocview.model.analyses.diff.sides import Side
from xocview.model.analyses.diff.signatures import combine, refine
from xocview.model.analyses.diff.spread import Matching, join_unique
from xocview.model.analyses.diff.votes import mutual_best, vote

__all__ = ["LEVELS", "match_nodes"]

_I = np.int64
LEVELS = 4  # refinement steps: labels see this many edges around a node


def match_nodes(a: Side, b: Side) -> tuple[np.ndarray, np.ndarray]:
    """Old position -> new position and back (-1: no partner), a one-to-one matching."""
    wl_a, wl_b = refine(a, a.fine, LEVELS), refine(b, b.fine, LEVELS)
    m = Matching(a, b, wl_a[2], wl_b[2])
    # anchors first, all of them, then what they lead to: a neighbour reached from one
    # anchor must not take the place of another
    strong = m.take(*_strong_ids(a, b))
    named = m.take(*_same_first_output(a, b))
    m.spread(*(np.concatenate(x) for x in zip(strong, named, strict=True)), taken=True)
    tensor_pairs = _seed_tensors(a, b)
    ta = np.flatnonzero(tensor_pairs >= 0)
    m.spread(*(np.zeros(0, dtype=_I),) * 2, ta, tensor_pairs[ta])
    for level in range(LEVELS, -1, -1):
        fa, fb = m.free_a(), m.free_b()
        i, j = join_unique(wl_a[level][fa], wl_b[level][fb])
        m.spread(fa[i], fb[j])
    for level in range(LEVELS, 1, -1):
        m.spread(*_in_order(m, wl_a[level], wl_b[level]))
    fa, fb = m.free_a(), m.free_b()
    i, j = _same_codes(a.ident[fa], b.ident[fb])
    same_op = a.op[fa[i]] == b.op[fb[j]]
    m.spread(fa[i][same_op], fb[j][same_op])
    _by_votes(m, tensor_pairs)
    _match_groups(m)
    return m.ab, m.ba


def _by_votes(m: Matching, tensor_pairs: np.ndarray) -> None:
    """Votes of matched neighbours until they settle; then replaced operators."""
    for same_op, least in ((True, 0.0), (False, 3.0)):
        while True:
            pa, pb = mutual_best(m, *vote(m, tensor_pairs, same_op), least=least)
            if not m.spread(pa, pb):
                break


def _strong_ids(a: Side, b: Side) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of nodes with the same id, op type, attributes and ids around them."""
    own_a, own_b = combine(a.ident, a.fine), combine(b.ident, b.fine)
    near_a, near_b = combine(a.ident, a.op), combine(b.ident, b.op)
    seen_a = refine(a, own_a, 1, near_a, combine(a.tensor_ident, a.tensor_label))[1]
    seen_b = refine(b, own_b, 1, near_b, combine(b.tensor_ident, b.tensor_label))[1]
    i, j = _same_codes(a.ident, b.ident)
    ok = seen_a[i] == seen_b[j]
    return i[ok], j[ok]


def _same_first_output(a: Side, b: Side) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of nodes whose first outputs have the same tensor id, and the same op type or the
    same node id (an operator replaced in place): tensor names often outlive node names (an
    unnamed ONNX node's id is its position)."""
    ha, hb = np.flatnonzero(a.n_out > 0), np.flatnonzero(b.n_out > 0)
    first_a = a.tensor_ident[a.out_tensor[a.out_ptr[ha]]]
    first_b = b.tensor_ident[b.out_tensor[b.out_ptr[hb]]]
    i, j = _same_codes(first_a, first_b)
    pa, pb = ha[i], hb[j]
    ok = ((a.op[pa] == b.op[pb]) | (a.ident[pa] == b.ident[pb])) & (first_a[i] != 0)
    return pa[ok], pb[ok]


def _same_codes(code_a: np.ndarray, code_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Places (i, j) with ``code_a[i] == code_b[j]``, each code's first place in ``code_b``."""
    order = np.argsort(code_b, kind="stable")
    ranked = code_b[order]
    at = np.searchsorted(ranked, code_a)
    at = np.minimum(at, max(len(ranked) - 1, 0))
    ok = (ranked[at] == code_a) if len(ranked) else np.zeros(len(code_a), dtype=bool)
    return np.flatnonzero(ok), order[at[ok]]


def _seed_tensors(a: Side, b: Side) -> np.ndarray:
    """Old tensor -> new tensor for graph inputs, outputs and producer-less tensors (weights)
    with equal ids; then the inputs and the outputs left over, by position when as many are
    left on each side. -1 elsewhere."""
    out = np.full(len(a.producer), -1, dtype=_I)
    ga, gb = a.graph, b.graph
    pick_a = np.zeros(len(a.producer), dtype=bool)
    pick_a[np.flatnonzero(a.producer < 0)] = True
    pick_a[list(ga.inputs) + list(ga.outputs)] = True
    pick_a[-1] = False
    pick_b = np.zeros(len(b.producer), dtype=bool)
    pick_b[np.flatnonzero(b.producer < 0)] = True
    pick_b[list(gb.inputs) + list(gb.outputs)] = True
    pick_b[-1] = False
    ta, tb = np.flatnonzero(pick_a), np.flatnonzero(pick_b)
    i, j = _same_codes(a.tensor_ident[ta], b.tensor_ident[tb])
    out[ta[i]] = tb[j]
    taken_b = set(tb[j].tolist())
    for side_a, side_b in ((ga.inputs, gb.inputs), (ga.outputs, gb.outputs)):
        left_a = [t for t in side_a if out[t] < 0]
        left_b = [t for t in side_b if t not in taken_b]
        if len(left_a) == len(left_b):
            for t, u in zip(left_a, left_b, strict=True):
                out[t] = u
                taken_b.add(u)
    return out


def _in_order(m: Matching, la: np.ndarray, lb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Free nodes whose label is shared by equally many free nodes on each side, paired in
    topological order within each label."""
    fa, fb = m.free_a(), m.free_b()
    ka, ca = np.unique(la[fa], return_counts=True)
    kb, cb = np.unique(lb[fb], return_counts=True)
    common, x, y = np.intersect1d(ka, kb, assume_unique=True, return_indices=True)
    good = common[(ca[x] == cb[y]) & (ca[x] > 1)]
    xa, xb = fa[np.isin(la[fa], good)], fb[np.isin(lb[fb], good)]
    xa = xa[np.lexsort((m.a.rank[xa], la[xa]))]
    xb = xb[np.lexsort((m.b.rank[xb], lb[xb]))]
    return xa, xb


def _match_groups(m: Matching) -> None:
    """Groups without inputs and outputs: same id, then where most of their children went."""
    a, b = m.a, m.b
    ga = np.flatnonzero(a.hierarchy.is_group & ~a.takes_part & ~a.section)
    gb = np.flatnonzero(b.hierarchy.is_group & ~b.takes_part & ~b.section)
    i, j = _same_codes(a.ident[ga], b.ident[gb])
    m.ab[ga[i]], m.ba[gb[j]] = gb[j], ga[i]
    up_a, up_b = _real_parent(a), _real_parent(b)
    for _ in range(a.hierarchy.max_depth + 1):
        kids = np.flatnonzero((m.ab >= 0) & (up_a >= 0))
        pa, pb = up_a[kids], up_b[m.ab[kids]]
        ok = (pb >= 0) & (m.ab[pa] < 0)
        ok[ok] = m.ba[pb[ok]] < 0
        if not ok.any():
            break
        keys, inverse = np.unique(pa[ok] * b.n + pb[ok], return_inverse=True)
        score = np.bincount(inverse).astype(np.float64)
        xa, xb = mutual_best(m, *np.divmod(keys, b.n), score)
        if not len(xa):
            break
        m.ab[xa], m.ba[xb] = xb, xa


def _real_parent(side: Side) -> np.ndarray:
    """Each node's nearest enclosing group that is not a derived section (-1: none)."""
    parent = side.hierarchy.parent.copy()
    for _ in range(side.hierarchy.max_depth + 1):
        up = (parent >= 0) & side.section[np.maximum(parent, 0)]
        if not up.any():
            break
        parent[up] = side.hierarchy.parent[parent[up]]
    return parent
