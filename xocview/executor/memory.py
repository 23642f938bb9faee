"""Bytes held by live tensors, counting a buffer once however many views share it."""

from __future__ import annotations

import numpy as np

__all__ = ["LiveBytes"]


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


class LiveBytes:
    """Adds a tensor when it is stored and drops it when freed; keeps the peak.

    Kernels return views (Reshape, Transpose, Identity), so sizes are tracked per underlying
    buffer with a count of the live tensors that use it.
    """

    def __init__(self) -> None:
        self._users: dict[int, list] = {}  # id(root) -> [root, count]
        self.current = 0
        self.peak = 0

    def add(self, value: object) -> None:
        if isinstance(value, list):  # a sequence: its tensors
            for v in value:
                self.add(v)
            return
        if not isinstance(value, np.ndarray):
            return
        root = _root(value)
        entry = self._users.get(id(root))
        if entry is None:
            self._users[id(root)] = [root, 1]
            self.current += root.nbytes
            self.peak = max(self.peak, self.current)
        else:
            entry[1] += 1

    def drop(self, value: object) -> None:
        if isinstance(value, list):
            for v in value:
                self.drop(v)
            return
        if not isinstance(value, np.ndarray):
            return
        root = _root(value)
        entry = self._users.get(id(root))
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del self._users[id(root)]
            self.current -= root.nbytes
