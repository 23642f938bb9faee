"""A fan-out to many layers is one trunk that branches at each target (Graphviz's
concentrate): its edges leave their source by one port and share their route down to the
layer above their target, where each branches off."""

from __future__ import annotations

import numpy as np

from xocview.layout.pipeline import layout


def _mask_to_every_layer(layers: int) -> tuple[int, np.ndarray, np.ndarray]:
    """A chain of ``layers`` blocks (node k -> k + 1) and one mask (the last node) read by
    every block but the first; the mask's source feeds block 0 too, as an embedding would."""
    n = layers + 1
    mask = layers
    src = np.r_[np.arange(layers - 1), mask, np.full(layers - 1, mask)]
    dst = np.r_[np.arange(1, layers), 0, np.arange(1, layers)]
    return n, src, dst


def test_a_fan_out_leaves_by_one_port_and_shares_its_trunk() -> None:
    n, src, dst = _mask_to_every_layer(12)
    res = layout(n, src, dst, np.full(n, 90.0), np.full(n, 30.0))
    fan = np.flatnonzero(src == n - 1)
    long = [e for e in fan.tolist() if len(res.points[e]) > 2]
    assert len(long) >= 9
    starts = np.array([res.points[e][0] for e in long])
    assert np.allclose(starts, starts[0]), "the trunk's edges leave by one port"
    longest = max(long, key=lambda e: len(res.points[e]))
    for e in long:  # every edge follows the longest one's route until it branches off
        pts = res.points[e]
        assert np.allclose(pts[:-2], res.points[longest][: len(pts) - 2])


def test_edges_to_the_next_layer_keep_ports_of_their_own() -> None:
    # a source read by three nodes on the next layer: three ports spread over its bottom
    res = layout(4, np.array([0, 0, 0]), np.array([1, 2, 3]), np.full(4, 90.0), np.full(4, 30.0))
    xs = sorted(float(res.points[e][0][0]) for e in range(3))
    assert xs[0] < xs[1] < xs[2]
    assert len({round(float(res.points[e][0][1]), 6) for e in range(3)}) == 1
