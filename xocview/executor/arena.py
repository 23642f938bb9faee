"""Freed tensor memory kept in the process while a run is timed, as a runtime's arena keeps it.

glibc's malloc gives every block above 128 KiB its own fresh mapping and returns it to the
system when freed (or trims the heap top back), so each pass of a model pays a page fault
per 4 KiB of every intermediate tensor: an Erf over a 197x1024 tensor measured 1.7 ms instead
of 0.43 ms, a 4-layer ViT 30 ms instead of 22 ms, and the profile blamed whichever kernel
touched new memory first. onnxruntime allocates from an arena and never pays that. So, for the
duration of a run, large blocks come from the heap and freed memory stays there for the next
pass to reuse; afterwards the thresholds go back to glibc's defaults and the free memory is
returned to the system. Elsewhere (macOS, Windows, musl) this is a no-op.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["reused_memory"]

# mallopt parameters and glibc's defaults for them (malloc.h, mallopt(3))
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_DEFAULT_THRESHOLD = 128 * 1024
# Blocks above this still get their own mapping: a tensor of 1 GiB is rare, and the heap
# need not hold it after the run.
_LARGEST_REUSED = 1 << 30
_FALLBACK_LARGEST = 32 << 20  # the most glibc builds that cap the threshold accept

_lock = threading.Lock()
_active = 0  # runs inside reused_memory(), across threads


def _glibc() -> Any | None:
    """The C library when it is glibc (the one with these knobs), else None."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (absent from musl, macOS and Windows)
        libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        libc.malloc_trim.argtypes = [ctypes.c_size_t]
        return libc
    except (OSError, AttributeError, TypeError):
        return None


_LIBC = _glibc()


@contextlib.contextmanager
def reused_memory() -> Iterator[None]:
    """Inside the block, freed large blocks are kept for reuse; after the last concurrent
    block, glibc's defaults are back and the free memory is given back to the system."""
    global _active
    libc = _LIBC
    if libc is None:
        yield
        return
    with _lock:
        if _active == 0:
            if not libc.mallopt(_M_MMAP_THRESHOLD, _LARGEST_REUSED):
                libc.mallopt(_M_MMAP_THRESHOLD, _FALLBACK_LARGEST)
            libc.mallopt(_M_TRIM_THRESHOLD, _LARGEST_REUSED * 2)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                libc.mallopt(_M_MMAP_THRESHOLD, _DEFAULT_THRESHOLD)
                libc.mallopt(_M_TRIM_THRESHOLD, _DEFAULT_THRESHOLD)
                libc.malloc_trim(0)
