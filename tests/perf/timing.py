"""The one way the benchmark scripts time things: median of several runs after a collection."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

__all__ = ["median_time"]


def median_time(func: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``func`` (the machine is noisy: 2 shared cores)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
