"""xocview/layout/cross_count.py against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from xocview.layout.cross_count import count_crossings, inversions


@given(st.lists(st.integers(min_value=0, max_value=30), max_size=80))
def test_inversions_match_brute_force(values: list[int]) -> None:
    brute = sum(
        1 for i in range(len(values)) for j in range(i + 1, len(values)) if values[i] > values[j]
    )
    assert inversions(np.array(values, dtype=np.int64)) == brute


def test_segments_of_different_layer_pairs_do_not_cross() -> None:
    # layer 0: a b ; layer 1: c d ; layer 2: e f.  a->d, b->c cross; c->e, d->f do not.
    a, b, c, d, e, f = range(6)
    upper = np.array([a, b, c, d])
    lower = np.array([d, c, e, f])
    layer = np.array([0, 0, 1, 1])
    pos = np.array([0, 1, 0, 1, 0, 1])
    assert count_crossings(upper, lower, layer, pos) == 1
