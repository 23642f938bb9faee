"""The layout's own graph: edges as numpy arrays with CSR adjacency, nothing else.

Every phase works on a LayoutGraph and returns arrays; none of them sees the shared model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["LayoutGraph", "csr"]

_I = np.int64


def csr(n: int, keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and values grouped by key (stable: values keep their order per key)."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=_I)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order]


@dataclass
class LayoutGraph:
    """``n`` nodes and directed edges ``src[i] -> dst[i]`` (no self-loops once built)."""

    n: int
    src: np.ndarray
    dst: np.ndarray

    def __post_init__(self) -> None:
        self.src = np.asarray(self.src, dtype=_I)
        self.dst = np.asarray(self.dst, dtype=_I)

    @property
    def m(self) -> int:
        return len(self.src)

    def out_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Successor lists: ptr, and the edge indices of each node's out-edges."""
        return csr(self.n, self.src, np.arange(self.m, dtype=_I))

    def in_csr(self) -> tuple[np.ndarray, np.ndarray]:
        """Predecessor lists: ptr, and the edge indices of each node's in-edges."""
        return csr(self.n, self.dst, np.arange(self.m, dtype=_I))
