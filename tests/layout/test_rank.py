"""xocview/layout/rank.py and acyclic.py: feasible ranks, shorter spans, cycles broken."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xocview.layout.acyclic import feedback_edges, topological_levels
from xocview.layout.graph import LayoutGraph
from xocview.layout.rank import assign_ranks, total_span


@st.composite
def digraphs(draw: st.DrawFn) -> LayoutGraph:
    n = draw(st.integers(min_value=1, max_value=30))
    node = st.integers(min_value=0, max_value=n - 1)
    edges = [e for e in draw(st.lists(st.tuples(node, node), max_size=60)) if e[0] != e[1]]
    return LayoutGraph(
        n,
        np.array([e[0] for e in edges], dtype=np.int64),
        np.array([e[1] for e in edges], dtype=np.int64),
    )


@settings(max_examples=200, deadline=None)
@given(g=digraphs())
def test_reversing_the_feedback_set_leaves_a_dag_with_feasible_short_ranks(g: LayoutGraph) -> None:
    rev = feedback_edges(g)
    dag = LayoutGraph(g.n, np.where(rev, g.dst, g.src), np.where(rev, g.src, g.dst))
    levels = topological_levels(dag)
    assert levels is not None
    rank = assign_ranks(dag)
    assert np.all(rank[dag.dst] > rank[dag.src])
    assert rank.min() == 0
    assert total_span(dag, rank) <= total_span(dag, levels)


@settings(max_examples=100, deadline=None)
@given(
    widths=st.lists(st.integers(min_value=1, max_value=40), min_size=1, max_size=12),
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_levels_are_longest_paths_through_narrow_and_wide_rounds(widths: list, seed: int) -> None:
    # layers of 1 to 40 nodes, so Kahn's rounds switch between node by node and arrays
    rng = np.random.default_rng(seed)
    layer = np.repeat(np.arange(len(widths)), widths)
    src, dst = [], []
    for v in range(len(layer)):
        above = np.flatnonzero(layer < layer[v])
        for u in rng.choice(above, size=min(len(above), 2), replace=False):
            src.append(int(u))
            dst.append(v)
    g = LayoutGraph(len(layer), np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64))
    want = np.zeros(g.n, dtype=np.int64)
    for v in range(g.n):  # nodes are numbered in a topological order
        preds = g.src[g.dst == v]
        if len(preds):
            want[v] = want[preds].max() + 1
    assert topological_levels(g).tolist() == want.tolist()


def test_dags_reverse_nothing() -> None:
    g = LayoutGraph(4, np.array([0, 0, 1, 2]), np.array([1, 2, 3, 3]))
    assert not feedback_edges(g).any()


def test_a_weight_chain_hangs_next_to_its_consumer() -> None:
    # main path 0->1->2->3->4; weight 5 -> unsqueeze 6 -> node 4
    g = LayoutGraph(7, np.array([0, 1, 2, 3, 5, 6]), np.array([1, 2, 3, 4, 6, 4]))
    rank = assign_ranks(g)
    assert rank.tolist() == [0, 1, 2, 3, 4, 2, 3]


def test_assign_ranks_refuses_a_cycle() -> None:
    g = LayoutGraph(2, np.array([0, 1]), np.array([1, 0]))
    with pytest.raises(ValueError, match="acyclic"):
        assign_ranks(g)


def test_group_moves_shorten_what_single_moves_cannot() -> None:
    from xocview.layout.rank import shift_groups

    # chain 0->1->2->3->4, and 5->6->4 starting at the top: 6 cannot move down alone (its
    # edge from 5 would grow as much as its edge to 4 shrinks); 5 and 6 together can
    g = LayoutGraph(7, np.array([0, 1, 2, 3, 5, 6]), np.array([1, 2, 3, 4, 6, 4]))
    start = [0, 1, 2, 3, 4, 0, 1]
    moved = np.array(shift_groups(g, list(start)))
    moved -= moved.min()
    assert moved.tolist() == [0, 1, 2, 3, 4, 2, 3]
    assert total_span(g, moved) == 6
