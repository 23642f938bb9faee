"""The thread count kernels run with while a run is timed.

numpy hands matrix products to its BLAS (OpenBLAS here), which starts a thread per core. On a
machine that is busy with anything else (a browser, another build), those threads wait for
each other and a 0.2 ms convolution measures 30 ms: the profile then shows contention, not the
model. So a run sets the BLAS and OpenMP pools to a known size (threadpoolctl) for its whole
duration, one thread unless asked otherwise, and records the count with the times.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

__all__ = ["DEFAULT_THREADS", "available_cores", "limited_threads", "resolve_threads"]

# One thread: the time of each node is its own work, stable on a loaded machine and comparable
# with onnxruntime's intra-op pool of one.
DEFAULT_THREADS = 1


def available_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def resolve_threads(threads: int | None) -> int:
    """The thread count a run uses: None is the default, 0 every available core.

    Raises ValueError for a negative count.
    """
    if threads is None:
        return DEFAULT_THREADS
    if threads < 0:
        raise ValueError(f"threads must be >= 0 (0: every core); got {threads}")
    return threads or available_cores()


@contextlib.contextmanager
def limited_threads(threads: int) -> Iterator[None]:
    """BLAS and OpenMP pools of ``threads`` threads inside the block, as they were after it."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads):
        yield
