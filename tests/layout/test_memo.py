"""xocview/layout/memo.py: each distinct group problem is laid out once and reused."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from xocview.layout.memo import LayoutMemo, hint_ranks, problem_key
from xocview.layout.nested import MEMO, nested_layout
from xocview.layout.pipeline import LayoutResult, layout


def blocks(count: int, size: int = 6) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """``count`` identical blocks in a chain (a diamond inside each), each block a group."""
    src, dst = [], []
    for b in range(count):
        o = b * size
        src += [o, o, o + 1, o + 2, o + 3, o + 4]
        dst += [o + 1, o + 2, o + 3, o + 3, o + 4, o + 5]
        if b:
            src.append(o - 1)
            dst.append(o)
    member = np.repeat(np.arange(count), size)
    return count * size, np.array(src), np.array(dst), member


def test_identical_blocks_are_laid_out_once_and_drawn_alike() -> None:
    n, src, dst, member = blocks(40)
    w, h = np.full(n, 80.0), np.full(n, 30.0)
    parent = np.full(40, -1)
    MEMO.clear()
    before = MEMO.misses
    r = nested_layout(n, src, dst, w, h, member=member, parent=parent)
    # the top level, the first block (no port in), the last (no port out), the 37 others
    assert MEMO.misses - before == 4
    first = np.stack([r.x[6:12] - r.x[6], r.y[6:12] - r.y[6]])
    for b in range(2, 39):
        block = slice(b * 6, b * 6 + 6)
        assert np.allclose(np.stack([r.x[block] - r.x[b * 6], r.y[block] - r.y[b * 6]]), first)


def test_a_relayout_lays_out_only_what_changed() -> None:
    """Growing one block's boxes (as opening a group inside it would) misses the memo for that
    block and the level holding it; the 39 others are reused, however they moved."""
    n, src, dst, member = blocks(40)
    w, h = np.full(n, 80.0), np.full(n, 30.0)
    rng = np.random.default_rng(1)
    w += rng.integers(0, 3, n) * 10.0  # every block its own problem
    parent = np.full(40, -1)
    MEMO.clear()
    r = nested_layout(n, src, dst, w, h, member=member, parent=parent)
    misses = MEMO.misses
    w[13 * 6 + 2] += 200.0
    again = nested_layout(n, src, dst, w, h, member=member, parent=parent, order_hint=r.x)
    assert MEMO.misses - misses <= 2 + 40  # with hints every block is a new problem once...
    misses = MEMO.misses
    w[13 * 6 + 2] += 100.0
    nested_layout(n, src, dst, w, h, member=member, parent=parent, order_hint=again.x)
    assert MEMO.misses - misses == 2  # ... and then only block 13 and the top level


def test_memo_results_equal_fresh_layouts() -> None:
    n, src, dst, member = blocks(5)
    w, h = np.full(n, 80.0), np.full(n, 30.0)
    MEMO.clear()
    a = nested_layout(n, src, dst, w, h, member=member, parent=np.full(5, -1))
    b = nested_layout(n, src, dst, w, h, member=member, parent=np.full(5, -1))
    assert MEMO.hits >= 5
    assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
    assert all(np.array_equal(p, q) for p, q in zip(a.points, b.points, strict=True))


def test_hints_keep_only_their_order() -> None:
    ranks = hint_ranks(np.array([30.0, np.nan, -5.0, 7.0]))
    assert ranks is not None
    assert np.array_equal(ranks, [2.0, np.nan, 0.0, 1.0], equal_nan=True)
    assert hint_ranks(None) is None
    a = problem_key(3, np.array([1, 2]), None, (2.5, 0.6))
    assert a == problem_key(3, np.array([1, 2]), None, (2.5, 0.6))
    assert a != problem_key(3, np.array([1, 3]), None, (2.5, 0.6))
    assert a != problem_key(3, np.array([1, 2], dtype=np.int32), None, (2.5, 0.6))


def test_the_memo_is_bounded_by_the_units_it_holds() -> None:
    memo = LayoutMemo(max_units=10)
    made = []

    def make(k: int) -> Callable[[], LayoutResult]:
        def compute() -> LayoutResult:
            made.append(k)
            return layout(
                k,
                np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64),
                np.full(k, 10.0),
                np.full(k, 10.0),
            )

        return compute

    memo.get("a", 4, make(4))
    memo.get("b", 4, make(4))
    memo.get("a", 4, make(4))  # a hit: "a" is now the most recent
    memo.get("c", 4, make(4))  # 12 units: "b", the least recent, goes
    assert made == [4, 4, 4]
    memo.get("a", 4, make(4))
    memo.get("b", 4, make(4))
    assert made == [4, 4, 4, 4]
    with pytest.raises(ZeroDivisionError):
        memo.get("d", 1, lambda: 1 / 0)  # type: ignore[arg-type, return-value]
    assert memo.get("big", 11, make(11)) is not memo.get("big", 11, make(11))  # never held
