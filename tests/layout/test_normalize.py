"""xocview/layout/normalize.py: continuous dummy chains, one node per layer crossed."""

from __future__ import annotations

import numpy as np

from xocview.layout.normalize import normalize


def test_chains_are_continuous_and_parallel_edges_share_one() -> None:
    src = np.array([0, 0, 1, 0])
    dst = np.array([2, 1, 2, 2])
    rank = np.array([0, 1, 3])
    lg = normalize(3, src, dst, rank)
    assert lg.num_nodes == 3 + 2 + 1  # (0,2) spans 3 -> 2 dummies; (1,2) spans 2 -> 1
    assert np.all(lg.rank[lg.seg_dst] == lg.rank[lg.seg_src] + 1)
    assert lg.edge_pair[0] == lg.edge_pair[3]  # the two 0->2 edges share a chain
    for k in range(len(lg.pair_src)):
        chain = lg.chain_nodes[lg.chain_ptr[k] : lg.chain_ptr[k + 1]]
        assert chain[0] == lg.pair_src[k] and chain[-1] == lg.pair_dst[k]
        assert np.all(np.diff(lg.rank[chain]) == 1)


def test_long_edges_of_one_source_share_a_trunk_of_dummies() -> None:
    """A mask feeding layers 2, 4 and 7 below it: one dummy per layer down to the farthest
    target (5), not one per edge and layer (1 + 3 + 5 = 9); each edge leaves the trunk on the
    layer above its target, and every segment is listed once."""
    rank = np.array([0, 2, 4, 7, 1])
    src = np.array([0, 0, 0, 4])
    dst = np.array([1, 2, 3, 3])
    lg = normalize(5, src, dst, rank)
    trunk = lg.chain_nodes[lg.chain_ptr[2] : lg.chain_ptr[3]]  # 0 -> 3, the longest
    assert lg.num_nodes == 5 + 6 + 5  # source 0: 6 dummies (layers 1..6); source 4: 5
    for k in range(len(lg.pair_src)):
        chain = lg.chain_nodes[lg.chain_ptr[k] : lg.chain_ptr[k + 1]]
        assert np.all(np.diff(lg.rank[chain]) == 1)
        if lg.pair_src[k] == 0:
            assert np.array_equal(chain[:-1], trunk[: len(chain) - 1])
    pairs = set(zip(lg.seg_src.tolist(), lg.seg_dst.tolist(), strict=True))
    assert len(pairs) == len(lg.seg_src)
    assert len(pairs) == 6 + 3 + 6  # the trunk of 0, its three ends; the chain of 4
