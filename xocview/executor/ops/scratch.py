"""Work memory for kernels, one buffer per thread kept between calls.

A fresh large array costs a page fault per page on its first touch, which outside a run's
reused memory (a kernel called on its own, or inside a network where freed memory goes back
to the system) can take as long as a convolution or a pooling itself. Conv and the pools
carve their work arrays from this buffer instead. What it holds is valid until the thread's
next kernel asks for scratch: a kernel never returns it, nor keeps it across another's call.
"""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["ALIGN", "scratch"]

ALIGN = 64  # bytes: work arrays start on cache-line boundaries
_LIMIT = 1 << 26  # a larger request gets fresh memory, not a buffer kept for ever


class _Kept(threading.local):
    buf: np.ndarray | None = None
    base = 0  # first byte of buf on an ALIGN boundary


_KEPT = _Kept()


def scratch(size: int) -> tuple[np.ndarray, int]:
    """At least ``size`` bytes (uint8) and the offset of the first ALIGN-ed one; the kept
    buffer grows to the largest request."""
    if size > _LIMIT:
        fresh = np.empty(size + ALIGN, np.uint8)
        return fresh, -fresh.ctypes.data % ALIGN
    kept = _KEPT.buf
    if kept is None or kept.size < size + ALIGN:
        kept = _KEPT.buf = np.empty(size + ALIGN, np.uint8)
        _KEPT.base = -kept.ctypes.data % ALIGN
    return kept, _KEPT.base
