"""xocview/layout/pipeline.py: invariants of whole layouts, on random graphs of every kind."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from xocview.layout import layout


@st.composite
def graphs(draw: st.DrawFn) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Random directed graphs: cycles, self-loops, multi-edges, isolated nodes, empty."""
    n = draw(st.integers(min_value=0, max_value=24))
    if n == 0:
        edges: list[tuple[int, int]] = []
    else:
        node = st.integers(min_value=0, max_value=n - 1)
        edges = draw(st.lists(st.tuples(node, node), max_size=40))
    w = draw(st.lists(st.floats(min_value=4, max_value=120), min_size=n, max_size=n))
    h = draw(st.lists(st.floats(min_value=4, max_value=60), min_size=n, max_size=n))
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    return n, src, dst, np.array(w), np.array(h)


def _boxes_overlap(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray) -> bool:
    dx = np.abs(x[:, None] - x[None, :]) < (w[:, None] + w[None, :]) / 2 - 1e-6
    dy = np.abs(y[:, None] - y[None, :]) < (h[:, None] + h[None, :]) / 2 - 1e-6
    both = dx & dy
    np.fill_diagonal(both, False)
    return bool(both.any())


@settings(max_examples=200, deadline=None)
@given(g=graphs())
def test_invariants_hold_on_random_graphs(g: tuple) -> None:
    n, src, dst, w, h = g
    r = layout(n, src, dst, w, h)
    assert r.x.shape == (n,) and r.y.shape == (n,)
    assert len(r.points) == len(src)
    assert not _boxes_overlap(r.x, r.y, w, h)
    for e, pts in enumerate(r.points):
        s, d = src[e], dst[e]
        assert pts.ndim == 2 and pts.shape[1] == 2 and len(pts) >= 2
        if s == d:
            assert np.isclose(pts[0, 0], r.x[s] + w[s] / 2)
            continue
        if not r.reversed[e]:
            assert r.y[d] > r.y[s]  # strictly downward
            assert np.all(np.diff(pts[:, 1]) > 0)
        # starts on the source's border, ends on the target's
        assert np.isclose(abs(pts[0, 1] - r.y[s]), h[s] / 2)
        assert abs(pts[0, 0] - r.x[s]) <= w[s] / 2 + 1e-6
        assert np.isclose(abs(pts[-1, 1] - r.y[d]), h[d] / 2)
        assert abs(pts[-1, 0] - r.x[d]) <= w[d] / 2 + 1e-6
    if n:
        assert r.width >= float((r.x + w / 2).max()) - 1e-6
        assert (r.x - w / 2).min() >= -1e-6 and (r.y - h / 2).min() >= -1e-6


@settings(max_examples=50, deadline=None)
@given(g=graphs())
def test_the_same_input_gives_the_same_output(g: tuple) -> None:
    n, src, dst, w, h = g
    a, b = layout(n, src, dst, w, h), layout(n, src, dst, w, h)
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert all(np.array_equal(p, q) for p, q in zip(a.points, b.points, strict=True))


@settings(max_examples=50, deadline=None)
@given(g=graphs())
def test_left_to_right_is_the_transpose(g: tuple) -> None:
    n, src, dst, w, h = g
    tb = layout(n, src, dst, h, w)
    lr = layout(n, src, dst, w, h, direction="LR")
    assert np.allclose(lr.x, tb.y) and np.allclose(lr.y, tb.x)


def test_reversed_edges_keep_their_true_direction() -> None:
    r = layout(3, np.array([0, 1, 2]), np.array([1, 2, 0]), np.full(3, 10.0), np.full(3, 10.0))
    assert r.reversed.sum() == 1
    e = int(np.flatnonzero(r.reversed)[0])
    pts = r.points[e]
    s, d = [(0, 1), (1, 2), (2, 0)][e]
    assert np.linalg.norm(pts[0] - [r.x[s], r.y[s]]) < np.linalg.norm(pts[-1] - [r.x[s], r.y[s]])
    assert np.linalg.norm(pts[-1] - [r.x[d], r.y[d]]) < np.linalg.norm(pts[0] - [r.x[d], r.y[d]])


def test_components_sit_side_by_side() -> None:
    # two chains of three nodes: their boxes occupy disjoint x ranges
    src, dst = np.array([0, 1, 3, 4]), np.array([1, 2, 4, 5])
    w = np.full(6, 20.0)
    r = layout(6, src, dst, w, np.full(6, 10.0))
    a = (r.x[:3] + 10).max()
    b = (r.x[3:] - 10).min()
    assert a < b


def test_the_hint_keeps_the_order_of_every_layer() -> None:
    rng = np.random.default_rng(3)
    n = 300
    src = rng.integers(0, n - 1, 500)
    dst = np.minimum(src + rng.integers(1, 20, 500), n - 1)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    w, h = np.full(n, 40.0), np.full(n, 20.0)
    first = layout(n, src, dst, w, h)
    again = layout(n, src, dst, w, h, order_hint=first.x)
    for r in np.unique(first.rank):
        members = np.flatnonzero(first.rank == r)
        assert np.array_equal(np.argsort(first.x[members]), np.argsort(again.x[members]))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((2, [0], [1, 1], [1, 1], [1, 1]), "1 sources but 2 targets"),
        ((2, [0], [2], [1, 1], [1, 1]), "node indices"),
        ((2, [0], [1], [1], [1, 1]), "widths and heights need 2 values"),
    ],
)
def test_bad_input_is_refused(args: tuple, message: str) -> None:
    n, s, d, w, h = args
    with pytest.raises(ValueError, match=message):
        layout(n, np.array(s), np.array(d), np.array(w, float), np.array(h, float))


def test_unknown_direction_is_refused() -> None:
    with pytest.raises(ValueError, match="direction"):
        layout(1, np.array([]), np.array([]), np.ones(1), np.ones(1), direction="BT")


def test_isotonic_regression_is_exact() -> None:
    from xocview.layout.position import isotonic

    y = isotonic(np.array([1.0, 3.0, 2.0, 0.0, 5.0]), np.array([1.0, 1.0, 1.0, 2.0, 1.0]))
    assert np.all(np.diff(y) >= 0)
    # 3, 2, 0 (weights 1, 1, 2) pool to (3 + 2 + 0) / 4 = 1.25, above the 1 before them
    assert np.allclose(y, [1.0, 1.25, 1.25, 1.25, 5.0])


def test_long_chains_do_not_drift_into_a_staircase() -> None:
    # a 200-node chain with a weight beside every step: two nodes a layer at most, so the
    # drawing must stay a few boxes wide however long the chain
    n = 400
    src = np.concatenate([np.arange(199), np.arange(200, 399)])
    dst = np.concatenate([np.arange(1, 200), np.arange(1, 200)])
    w = np.full(n, 80.0)
    r = layout(n, src, dst, w, np.full(n, 30.0))
    assert r.width < 8 * (80 + 24)


def test_transpose_removes_a_crossing_a_swap_can_fix() -> None:
    from xocview.layout.transpose import Adjacency, transpose

    # layer 0: a b ; layer 1: c d ; edges a->d, b->c cross once; swapping c and d fixes it
    pos = np.array([0, 1, 0, 1])
    rank = np.array([0, 0, 1, 1])
    adj = Adjacency(4, np.array([0, 1]), np.array([3, 2]))
    out = transpose(pos, rank, np.zeros(4, dtype=np.int64), adj)
    assert out.tolist() in ([0, 1, 1, 0], [1, 0, 0, 1])


def _pav(target: list[float], weight: list[float]) -> list[float]:
    """Pool adjacent violators, one element at a time: the reference for the vectorised one."""
    blocks: list[list[float]] = []  # [mean, weight, size]
    for t, w in zip(target, weight, strict=True):
        blocks.append([t, w, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2, s2 = blocks.pop()
            m1, w1, s1 = blocks[-1]
            blocks[-1] = [(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2, s1 + s2]
    return [m for m, _, s in blocks for _ in range(int(s))]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.floats(-1e3, 1e3, allow_nan=False), st.floats(1e-3, 10.0, allow_nan=False)
            ),
            min_size=1,
            max_size=40,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_grouped_isotonic_regression_matches_pooling_each_group(groups: list) -> None:
    from xocview.layout.position import isotonic_groups

    target = np.array([t for g in groups for t, _ in g])
    weight = np.array([w for g in groups for _, w in g])
    ids = np.repeat(np.arange(len(groups)), [len(g) for g in groups])
    want = [y for g in groups for y in _pav([t for t, _ in g], [w for _, w in g])]
    assert np.allclose(isotonic_groups(target, weight, ids), want, rtol=1e-9, atol=1e-6)


def test_long_falls_after_long_rises_pool_exactly() -> None:
    # more pooling passes than the vectorised loop makes: the rest is pooled one by one
    from xocview.layout.position import isotonic_groups

    target = np.concatenate([np.arange(200.0), [-1e4], np.arange(50.0)])
    weight = np.ones(len(target))
    ids = np.repeat([0, 1], [201, 50])
    got = isotonic_groups(target, weight, ids)
    assert np.allclose(got, _pav(target[:201].tolist(), [1.0] * 201) + list(range(50)))


def test_a_spine_with_weights_beside_some_layers_stays_straight() -> None:
    # x -> conv(x, w, b) -> relu -> relu -> conv(., w, b) ...: the layers with weights are
    # three boxes wide, the others one; the spine must be one vertical line
    spine, src, dst, n = [0], [], [], 1
    for _ in range(12):
        conv = n
        w, b = n + 1, n + 2
        src += [spine[-1], w, b]
        dst += [conv, conv, conv]
        relu1, relu2 = n + 3, n + 4
        src += [conv, relu1]
        dst += [relu1, relu2]
        spine += [conv, relu1, relu2]
        n += 5
    r = layout(n, np.array(src), np.array(dst), np.full(n, 80.0), np.full(n, 30.0))
    xs = r.x[np.array(spine[1:])]
    assert np.ptp(xs) < 20, xs


@settings(max_examples=100, deadline=None)
@given(g=graphs(), seed=st.integers(min_value=0, max_value=2**16))
def test_small_layers_sorted_in_python_order_as_the_arrays_do(g: tuple, seed: int) -> None:
    from xocview.layout import order

    n, src, dst, w, h = g
    rng = np.random.default_rng(seed)
    extra = rng.integers(0, max(n, 1), size=(2, 3 * n))  # denser: medians of 3 and 4
    src, dst = np.concatenate([src, extra[0]]), np.concatenate([dst, extra[1]])
    small = layout(n, src, dst, w, h)
    saved = order._SMALL
    order._SMALL = 0
    try:
        arrays = layout(n, src, dst, w, h)
    finally:
        order._SMALL = saved
    assert small.order.tolist() == arrays.order.tolist()
