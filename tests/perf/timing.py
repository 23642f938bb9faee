"""The one way the benchmark scripts time things: median of several runs after a collection."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

__all__ = ["median_time"]


def median_time(func: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``func`` (the machine is noisy: 2 shared cores).

    The result is kept until the clock has stopped, so that freeing it (for a loader, every
    object of the model) is not counted as part of making it.
    """
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
        del result
    return statistics.median(times)
