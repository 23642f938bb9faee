"""Many unconnected parts (a weights file's 32 layer groups) fill rows instead of one row."""

from __future__ import annotations

import numpy as np

from xocview.layout import layout

_WRAP = (1.8, 0.6)


def _boxes(x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray) -> np.ndarray:
    return np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=1)


def _overlap(boxes: np.ndarray) -> bool:
    lo = np.maximum(boxes[:, None, :2], boxes[None, :, :2])
    hi = np.minimum(boxes[:, None, 2:], boxes[None, :, 2:])
    inter = np.all(hi > lo, axis=2)
    np.fill_diagonal(inter, False)
    return bool(inter.any())


def test_32_unconnected_boxes_fill_rows_near_the_target_shape_in_order() -> None:
    n = 32
    w, h = np.full(n, 180.0), np.full(n, 40.0)
    empty = np.zeros(0, dtype=np.int64)
    flat = layout(n, empty, empty, w, h)
    wrapped = layout(n, empty, empty, w, h, wrap=_WRAP)
    assert flat.width > 20 * flat.height  # one row without wrapping
    assert 0.3 < wrapped.height / wrapped.width < 1.2
    assert not _overlap(_boxes(wrapped.x, wrapped.y, w, h))
    rows = np.unique(wrapped.y)
    assert len(rows) > 2
    # read as text: left to right, then the next row
    order = np.lexsort((wrapped.x, wrapped.y))
    assert list(order) == list(range(n))


def test_connected_parts_move_with_their_edges() -> None:
    n = 30  # 15 pairs a -> b
    src = np.arange(0, n, 2, dtype=np.int64)
    dst = src + 1
    w, h = np.full(n, 200.0), np.full(n, 40.0)
    out = layout(n, src, dst, w, h, wrap=_WRAP)
    assert len(np.unique(out.y)) > 2
    for e, line in enumerate(out.points):
        a, b = src[e], dst[e]
        assert abs(line[0][1] - (out.y[a] + h[a] / 2)) < 1e-6  # leaves the bottom of its source
        assert abs(line[-1][1] - (out.y[b] - h[b] / 2)) < 1e-6  # enters the top of its target
        assert abs(line[0][0] - out.x[a]) < 1e-6 and abs(line[-1][0] - out.x[b]) < 1e-6


def test_a_narrow_drawing_keeps_one_row_and_two_wide_parts_stack() -> None:
    empty = np.zeros(0, dtype=np.int64)
    few = layout(6, empty, empty, np.full(6, 100.0), np.full(6, 40.0), wrap=_WRAP)
    assert len(np.unique(few.y)) == 1  # 6 x 100 is narrower than a window
    two = layout(2, empty, empty, np.full(2, 1500.0), np.full(2, 40.0), wrap=_WRAP)
    assert len(np.unique(two.y)) == 2
    assert two.width < 1600
