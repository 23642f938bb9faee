"""The grid geometry that label placement asks: exact answers, and pairs that follow what is
near, not the area long edges span."""

from __future__ import annotations

import numpy as np

from xocview.ui.canvas.spatial import crosses_any, meets_any


def _crosses_brute(rect: tuple[float, float, float, float], p: np.ndarray, q: np.ndarray) -> bool:
    """Whether any segment passes through the rectangle's interior, sampled finely."""
    x0, y0, x1, y1 = rect
    t = np.linspace(0.0, 1.0, 20001)[:, None]
    for a, b in zip(p, q, strict=True):
        pts = a + (b - a) * t
        inside = (pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1)
        if inside.any():
            return True
    return False


def test_crosses_any_matches_a_brute_force_answer() -> None:
    rng = np.random.default_rng(7)
    n = 300
    x0, y0 = rng.uniform(0, 2000, n), rng.uniform(0, 2000, n)
    rects = (x0, y0, x0 + rng.uniform(5, 80, n), y0 + rng.uniform(5, 40, n))
    p = rng.uniform(0, 2000, (40, 2))
    q = rng.uniform(0, 2000, (40, 2))
    q[:5, 0] = p[:5, 0]  # upright segments
    q[5:10, 1] = p[5:10, 1]  # level ones
    p, q = np.vstack([p, p[:10]]), np.vstack([q, q[:10]])  # and repeated ones
    got = crosses_any(rects, p, q)
    want = [
        _crosses_brute((rects[0][i], rects[1][i], rects[2][i], rects[3][i]), p, q) for i in range(n)
    ]
    assert got.tolist() == want
    assert 20 < got.sum() < n  # the case says something


def test_long_shared_edges_cost_their_length_not_their_area() -> None:
    """500 copies of 20 long diagonal edges across a 20,000-unit square, and 200,000 small
    rectangles: the pairs of bounding boxes would be billions."""
    rng = np.random.default_rng(3)
    p = np.repeat(rng.uniform(0, 1000, (20, 2)), 500, axis=0)
    q = np.repeat(rng.uniform(19000, 20000, (20, 2)), 500, axis=0)
    m = 200_000
    x0, y0 = rng.uniform(0, 20000, m), rng.uniform(0, 20000, m)
    rects = (x0, y0, x0 + 30, y0 + 12)
    hit = crosses_any(rects, p, q)
    sample = rng.choice(m, 200, replace=False)
    hits = set(np.flatnonzero(hit).tolist())
    for i in sample.tolist():
        rect = (rects[0][i], rects[1][i], rects[2][i], rects[3][i])
        assert (i in hits) == _crosses_brute(rect, p[::500], q[::500])


def test_meets_any_finds_overlapping_rectangles() -> None:
    a = (
        np.array([0.0, 100.0]),
        np.array([0.0, 0.0]),
        np.array([10.0, 110.0]),
        np.array([10.0, 10.0]),
    )
    b = (np.array([5.0]), np.array([5.0]), np.array([50.0]), np.array([50.0]))
    assert meets_any(a, b).tolist() == [True, False]
