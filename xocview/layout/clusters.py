"""Clusters (expanded groups): border nodes that keep each group's members together.

Before: a layered graph and, for each real node, its innermost cluster (-1 for none), the
clusters nested by ``parent``. After: two chains of border nodes per cluster, one on its left
and one on its right on every layer the cluster spans (as dagre does). Ordering keeps a
cluster's nodes contiguous between its borders and positioning treats the borders as long
edges, so a cluster becomes a band that no other node enters; its outline is read off the
border positions.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from xocview.layout.normalize import Layered

__all__ = ["Clusters", "add_borders", "cluster_keys"]

_I = np.int64
BORDER_WIDTH = 16.0
CLUSTER_PAD = 20.0  # vertical space between a cluster's outline and its nodes, per nesting


@dataclass(frozen=True)
class Clusters:
    """Cluster facts for every node of the layered graph (real, dummy and border nodes)."""

    parent: np.ndarray  # per cluster: enclosing cluster, -1 at top level
    path: np.ndarray  # (nodes, levels): clusters from outermost to innermost, -1 padding
    depth_of_node: np.ndarray  # per node: number of clusters around it
    side: np.ndarray  # per node: -1 left border, +1 right border, 0 otherwise
    border_cluster: np.ndarray  # per border node (in order): its cluster
    border_rank: np.ndarray
    first_border: int  # node id of the first border node
    depth_of_cluster: np.ndarray

    @property
    def levels(self) -> int:
        return int(self.path.shape[1])

    def innermost(self) -> np.ndarray:
        """Innermost cluster of every node (-1 for none)."""
        if self.levels == 0:
            return np.full(len(self.side), -1, dtype=_I)
        idx = np.maximum(self.depth_of_node - 1, 0)
        inner = self.path[np.arange(len(self.side)), idx]
        return np.where(self.depth_of_node > 0, inner, -1)


def _depths(parent: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(parent), dtype=_I)
    for c in range(len(parent)):
        d, p = 0, int(parent[c])
        while p >= 0:
            d += 1
            p = int(parent[p])
        depth[c] = d
    return depth


def add_borders(
    lg: Layered, node_cluster: np.ndarray, parent: np.ndarray
) -> tuple[Layered, Clusters]:
    """The layered graph with border chains added, and the cluster facts of every node."""
    k = len(parent)
    depth = _depths(parent)
    levels = int(depth.max()) + 1 if k else 0
    chains: dict[int, list[int]] = {}
    for c in range(k):
        chain, p = [], c
        while p >= 0:
            chain.append(p)
            p = int(parent[p])
        chains[c] = chain[::-1]
    n_all = lg.num_nodes
    cluster = np.full(n_all, -1, dtype=_I)
    cluster[: lg.num_real] = node_cluster
    # A dummy belongs to the innermost cluster holding both ends of its edge.
    if n_all > lg.num_real:
        memo: dict[tuple[int, int], int] = {}
        chain_of = np.repeat(np.arange(len(lg.pair_src)), np.diff(lg.chain_ptr))
        is_d = lg.chain_nodes >= lg.num_real
        ends_a = node_cluster[lg.pair_src[chain_of[is_d]]].tolist()
        ends_b = node_cluster[lg.pair_dst[chain_of[is_d]]].tolist()
        owners = []
        for a, b in zip(ends_a, ends_b, strict=True):
            key = (a, b)
            if key not in memo:
                memo[key] = _common(chains.get(a, []), chains.get(b, []))
            owners.append(memo[key])
        cluster[lg.chain_nodes[is_d]] = owners
    # Rank span of every cluster, nested members included.
    lo = np.full(k, np.iinfo(np.int64).max, dtype=_I)
    hi = np.full(k, -1, dtype=_I)
    inside = cluster >= 0
    np.minimum.at(lo, cluster[inside], lg.rank[inside])
    np.maximum.at(hi, cluster[inside], lg.rank[inside])
    for c in np.argsort(-depth).tolist():
        p = int(parent[c])
        if p >= 0 and hi[c] >= 0:
            lo[p] = min(lo[p], lo[c])
            hi[p] = max(hi[p], hi[c])
    b_cluster, b_rank, b_side = [], [], []
    for c in range(k):
        if hi[c] < 0:
            continue
        for r in range(int(lo[c]), int(hi[c]) + 1):
            for s in (-1, 1):
                b_cluster.append(c)
                b_rank.append(r)
                b_side.append(s)
    nb = len(b_cluster)
    first = n_all
    bc = np.asarray(b_cluster, dtype=_I)
    br = np.asarray(b_rank, dtype=_I)
    bs = np.asarray(b_side, dtype=_I)
    ids = first + np.arange(nb, dtype=_I)
    # chain each side's border nodes down the layers
    nxt = np.flatnonzero((bc[:-2] == bc[2:]) & (bs[:-2] == bs[2:])) if nb > 2 else np.zeros(0, _I)
    seg_src = np.concatenate([lg.seg_src, ids[nxt]])
    seg_dst = np.concatenate([lg.seg_dst, ids[nxt + 2]])
    cluster_all = np.concatenate([cluster, bc])
    side = np.concatenate([np.zeros(n_all, dtype=_I), bs])
    path = np.full((n_all + nb, levels), -1, dtype=_I)
    depth_of_node = np.zeros(n_all + nb, dtype=_I)
    for c in range(k):
        members = np.flatnonzero(cluster_all == c)
        chain = chains[c]
        path[np.ix_(members, np.arange(len(chain)))] = chain
        depth_of_node[members] = len(chain)
    out = replace(lg, rank=np.concatenate([lg.rank, br]), seg_src=seg_src, seg_dst=seg_dst)
    return out, Clusters(parent, path, depth_of_node, side, bc, br, first, depth)


def _common(a: list[int], b: list[int]) -> int:
    """The innermost cluster on both chains (outermost first), -1 when none."""
    common = -1
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        common = x
    return common


def cluster_keys(members: np.ndarray, own: np.ndarray, cl: Clusters) -> list[np.ndarray]:
    """Sort keys (outermost level first) that keep clusters contiguous within a layer.

    Each level gives a value column and, below the deepest level, a group column.

    At each level a node is keyed by the mean ``own`` key of the cluster it belongs to at that
    level; at its own level by its own key (borders by -inf / +inf, so they end their
    cluster). Sorting by these keys in turn orders clusters by where their members want to
    be, and members within them.
    """
    if cl.levels == 0:
        return [own]
    path = cl.path[members]
    depth = cl.depth_of_node[members]
    side = cl.side[members]
    own_key = np.where(side < 0, -np.inf, np.where(side > 0, np.inf, own))
    real = side == 0
    keys = []
    for level in range(cl.levels + 1):
        if level < cl.levels:
            ids = path[:, level]
            at = (ids >= 0) & (depth > level)
            valid = at & real
            size = int(ids.max()) + 1 if len(ids) and ids.max() >= 0 else 0
            if size:
                total = np.bincount(ids[valid], weights=own[valid], minlength=size)
                count = np.bincount(ids[valid], minlength=size)
                # a cluster with only its borders on this layer: where its borders want to be
                total_b = np.bincount(ids[at], weights=own[at], minlength=size)
                count_b = np.bincount(ids[at], minlength=size)
                mean = np.where(
                    count > 0, total / np.maximum(count, 1), total_b / np.maximum(count_b, 1)
                )
                agg = np.where(at, mean[np.maximum(ids, 0)], np.nan)
            else:
                agg = np.full(len(members), np.nan)
        else:
            agg = np.full(len(members), np.nan)
        key = np.where(depth > level, agg, np.where(depth == level, own_key, 0.0))
        keys.append(np.where(np.isnan(key), own, key))
        # a tie between a cluster and a node (or another cluster) must not interleave them:
        # the group column keeps each cluster's members together at this level
        if level < cl.levels:
            ids = path[:, level]
            keys.append(np.where(depth > level, ids, len(cl.parent) + members).astype(float))
    return keys
