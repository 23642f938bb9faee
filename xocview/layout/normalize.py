"""Phase 2b, normalisation: long edges become chains of dummy nodes, one per layer crossed.

Before: ranks with ``rank[dst] > rank[src]`` for every edge; parallel edges allowed.
After: a proper layered graph of ``n + num_dummies`` nodes whose segments join adjacent
layers, and for every distinct (src, dst) pair the chain of nodes it passes through.
``run`` adds the dummies; routing later reads the chains to draw polylines (the undo).

The long edges of one source share their dummies: one per layer below it, as far down as its
farthest target, each edge leaving the shared trunk on the layer above its target. An
attention mask that feeds all 272 layers of a transformer is then one line down the drawing
with a branch into each layer (as Graphviz's ``concentrate`` draws fan-out), not 272
parallel lines and 37,000 dummies to order and place.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Layered", "normalize"]

_I = np.int64


@dataclass(frozen=True)
class Layered:
    """The layered graph: node ranks (real nodes first, then dummies) and its segments.

    ``pair_src``/``pair_dst`` are the distinct edges; chain k is
    ``chain_nodes[chain_ptr[k]:chain_ptr[k + 1]]`` from pair_src[k] to pair_dst[k];
    ``edge_pair[e]`` is the pair of input edge e.
    """

    num_real: int
    rank: np.ndarray
    seg_src: np.ndarray
    seg_dst: np.ndarray
    pair_src: np.ndarray
    pair_dst: np.ndarray
    edge_pair: np.ndarray
    chain_ptr: np.ndarray
    chain_nodes: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.rank)


def normalize(n: int, src: np.ndarray, dst: np.ndarray, rank: np.ndarray) -> Layered:
    """Dummy chains for the distinct edges of a ranked graph (all arrays, no Python loop)."""
    if len(src):
        pairs, edge_pair = np.unique(np.stack([src, dst], axis=1), axis=0, return_inverse=True)
        edge_pair = edge_pair.reshape(-1)
    else:
        pairs, edge_pair = np.zeros((0, 2), dtype=_I), np.zeros(0, dtype=_I)
    ps, pd = pairs[:, 0].astype(_I), pairs[:, 1].astype(_I)
    span = rank[pd] - rank[ps]
    if np.any(span < 1):
        raise ValueError("normalize needs rank[dst] > rank[src] for every edge")
    dummies = span - 1
    # dummy j of source s sits on layer rank[s] + 1 + j; s needs as many as its longest edge
    need = np.zeros(n, dtype=_I)
    if len(ps):
        np.maximum.at(need, ps, dummies)
    first_dummy = n + np.cumsum(need) - need
    num_dummy = int(need.sum())
    owner = np.repeat(np.arange(n, dtype=_I), need)
    dummy_rank = (
        rank[owner].astype(_I) + 1 + np.arange(num_dummy, dtype=_I) - (first_dummy[owner] - n)
    )
    # Chain k has span[k] + 1 nodes: its source, its dummies, its target.
    length = span + 1
    chain_ptr = np.zeros(len(ps) + 1, dtype=_I)
    np.cumsum(length, out=chain_ptr[1:])
    k = np.repeat(np.arange(len(ps), dtype=_I), length)
    step = np.arange(int(chain_ptr[-1]), dtype=_I) - chain_ptr[k]
    chain_nodes = np.where(
        step == 0, ps[k], np.where(step == span[k], pd[k], first_dummy[ps[k]] + step - 1)
    )
    last = np.ones(len(chain_nodes), dtype=bool)
    last[chain_ptr[1:] - 1] = False
    total = n + num_dummy
    seg = np.unique(chain_nodes[last] * total + chain_nodes[np.flatnonzero(last) + 1])
    seg_src, seg_dst = seg // total, seg % total
    return Layered(
        num_real=n,
        rank=np.concatenate([rank.astype(_I), dummy_rank]),
        seg_src=seg_src,
        seg_dst=seg_dst,
        pair_src=ps,
        pair_dst=pd,
        edge_pair=edge_pair.astype(_I),
        chain_ptr=chain_ptr,
        chain_nodes=chain_nodes,
    )
