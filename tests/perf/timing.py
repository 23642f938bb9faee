"""The one way the benchmark scripts time things: median of several runs after a collection."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable

__all__ = ["back_to_back", "median_time", "paired_times"]


def _timed(func: Callable[[], object]) -> float:
    """Wall time of one call after a collection; the result is kept until the clock has
    stopped, so that freeing it (for a loader, every object of the model) is not counted."""
    gc.collect()
    start = time.perf_counter()
    result = func()
    elapsed = time.perf_counter() - start
    del result
    return elapsed


def median_time(func: Callable[[], object], repeat: int) -> float:
    """Median wall time of ``repeat`` calls of ``func`` (the machine is noisy: 2 shared cores)."""
    return statistics.median(_timed(func) for _ in range(repeat))


def paired_times(
    anchor: Callable[[], object], ours: Callable[[], object], repeat: int
) -> tuple[float, float, float]:
    """Median times of ``anchor`` and ``ours`` run in alternation, and the median ratio of
    each pair (ours / anchor).

    Alternating puts both under the same machine load: on these shared cores the speed of a
    whole phase of runs drifts by 20% or more, which timing one side after the other would
    charge to one of them.
    """
    first: list[float] = []
    second: list[float] = []
    for _ in range(repeat):
        first.append(_timed(anchor))
        second.append(_timed(ours))
    ratios = [b / a for a, b in zip(first, second, strict=True)]
    return statistics.median(first), statistics.median(second), statistics.median(ratios)


def back_to_back(func: Callable[[], object], repeat: int) -> list[float]:
    """Wall times of ``repeat`` calls in a row, the collector paused: how an inference runtime
    is timed pass after pass (and how the executor times its own passes). A collection
    between calls (``median_time``) evicts the caches and slows a sub-millisecond model by
    several times."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            func()
            times.append(time.perf_counter() - start)
        return times
    finally:
        if collecting:
            gc.enable()
