"""Layout quality on block-built network DAGs (tests/perf/net_dags.py), checked against
simple independent methods written here: the ranks' total edge span against the better of
longest-path-from-the-top and longest-path-from-the-bottom, and the crossings of the final
order against a plain barycenter layer sweep counted pair by pair."""

from __future__ import annotations

import numpy as np
import pytest

from tests.perf.net_dags import net_dag
from xocview.layout.graph import LayoutGraph
from xocview.layout.normalize import normalize
from xocview.layout.order import Layers, order_layers
from xocview.layout.rank import assign_ranks, total_span


def _longest_paths(n: int, src: list[int], dst: list[int]) -> list[int]:
    """Longest path from the sources, for nodes numbered in a topological order."""
    level = [0] * n
    for u, v in sorted(zip(src, dst, strict=True), key=lambda e: e[1]):
        level[v] = max(level[v], level[u] + 1)
    return level


def _simple_span(n: int, src: np.ndarray, dst: np.ndarray) -> int:
    """The better total span of ASAP and ALAP layering (net_dag numbers nodes in order)."""
    top = _longest_paths(n, src.tolist(), dst.tolist())
    flipped = _longest_paths(n, (n - 1 - dst).tolist(), (n - 1 - src).tolist())
    bottom = [max(flipped) - flipped[n - 1 - v] for v in range(n)]
    return min(
        sum(r[d] - r[s] for s, d in zip(src.tolist(), dst.tolist(), strict=True))
        for r in (top, bottom)
    )


@pytest.mark.parametrize("seed", range(4))
def test_ranks_are_no_longer_than_longest_path_either_way(seed: int) -> None:
    _, n, src, dst = net_dag(400, seed)
    rank = assign_ranks(LayoutGraph(n, src, dst))
    assert np.all(rank[dst] > rank[src])
    assert total_span(LayoutGraph(n, src, dst), rank) <= _simple_span(n, src, dst)


def _brute_crossings(upper: list[int], lower: list[int], pos: list[int]) -> int:
    """Pairs of segments between the same two layers whose ends are in opposite orders."""
    segs = list(zip(upper, lower, strict=True))
    total = 0
    for i, (a, b) in enumerate(segs):
        for c, d in segs[i + 1 :]:
            total += (pos[a] - pos[c]) * (pos[b] - pos[d]) < 0
    return total


def _barycenter_sweeps(rank: list[int], upper: list[int], lower: list[int]) -> int:
    """Crossings after plain barycenter sweeps down and up from the index order, best kept."""
    n = len(rank)
    layers: dict[int, list[int]] = {}
    for v in range(n):
        layers.setdefault(rank[v], []).append(v)
    pos = [0] * n
    for members in layers.values():
        for i, v in enumerate(members):
            pos[v] = i
    up: list[list[int]] = [[] for _ in range(n)]
    down: list[list[int]] = [[] for _ in range(n)]
    for a, b in zip(upper, lower, strict=True):
        down[a].append(b)
        up[b].append(a)

    def crossings() -> int:
        by_layer: dict[int, tuple[list[int], list[int]]] = {}
        for a, b in zip(upper, lower, strict=True):
            by_layer.setdefault(rank[a], ([], []))[0].append(a)
            by_layer[rank[a]][1].append(b)
        return sum(_brute_crossings(u, w, pos) for u, w in by_layer.values())

    best = crossings()
    for sweep in range(24):
        keys = sorted(layers)
        for r in keys[1:] if sweep % 2 == 0 else keys[-2::-1]:
            nb = up if sweep % 2 == 0 else down
            members = layers[r]
            key = {v: sum(pos[u] for u in nb[v]) / len(nb[v]) if nb[v] else pos[v] for v in members}
            members.sort(key=lambda v: (key[v], pos[v]))
            for i, v in enumerate(members):
                pos[v] = i
        best = min(best, crossings())
    return best


@pytest.mark.parametrize("seed", range(3))
def test_the_order_crosses_no_more_than_plain_barycenter_sweeps(seed: int) -> None:
    _, n, src, dst = net_dag(250, seed)
    rank = assign_ranks(LayoutGraph(n, src, dst))
    lg = normalize(n, src, dst, rank)
    comp = np.zeros(lg.num_nodes, dtype=np.int64)  # net_dag graphs are connected
    pos = order_layers(lg, comp)
    upper, lower = lg.seg_src.tolist(), lg.seg_dst.tolist()
    by_layer: dict[int, tuple[list[int], list[int]]] = {}
    for a, b in zip(upper, lower, strict=True):
        by_layer.setdefault(int(lg.rank[a]), ([], []))[0].append(a)
        by_layer[int(lg.rank[a])][1].append(b)
    ours = sum(_brute_crossings(u, w, pos.tolist()) for u, w in by_layer.values())
    assert ours == Layers(lg, comp).crossings(pos)  # the count the sweeps keep the best by
    assert ours <= _barycenter_sweeps(lg.rank.tolist(), upper, lower)
