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
