"""Group layouts remembered by their inputs, so that no group is laid out twice.

A group's layout depends only on its own problem (its units' sizes, its edges and ports, the
settings), not on where the group sits. So expanding one group lays out that group and its
ancestors (whose boxes grew) and takes every other group's layout from here; and the repeated
blocks of a network (272 identical transformer layers, 50 bottlenecks) are laid out once per
distinct block even when everything opens at once.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np

from xocview.layout.pipeline import LayoutResult

__all__ = ["LayoutMemo", "hint_ranks", "problem_key"]


def hint_ranks(hint: np.ndarray | None) -> np.ndarray | None:
    """An order hint as the ranks of its known values (NaN stays NaN): only the order of the
    previous positions matters, so a group that moved keeps its key."""
    if hint is None:
        return None
    known = np.flatnonzero(~np.isnan(hint))
    out = np.full(len(hint), np.nan)
    out[known[np.argsort(hint[known], kind="stable")]] = np.arange(len(known), dtype=np.float64)
    return out


def problem_key(*parts: np.ndarray | float | int | tuple[float, ...] | None) -> Hashable:
    """A key that is equal exactly when the inputs are: arrays by dtype, shape and bytes."""
    return tuple(
        (p.dtype.str, p.shape, p.tobytes()) if isinstance(p, np.ndarray) else p for p in parts
    )


class LayoutMemo:
    """A least-recently-used map from layout problems to results, bounded by the units held.

    Results are shared, so callers must not modify them (nested layouts only read them).
    """

    def __init__(self, max_units: int = 2_000_000) -> None:
        self.max_units = max_units
        self._items: OrderedDict[Hashable, tuple[LayoutResult, int]] = OrderedDict()
        self._units = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, units: int, compute: Callable[[], LayoutResult]) -> LayoutResult:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
                self.hits += 1
                return found[0]
        result = compute()
        with self._lock:
            self.misses += 1
            if key not in self._items and units <= self.max_units:
                self._items[key] = (result, units)
                self._units += units
                while self._units > self.max_units:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._units -= dropped
        return result

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._units = 0
