"""One way every reader makes an id unique among those taken (``unique``)."""

from __future__ import annotations

__all__ = ["unique"]


def unique(wanted: str, taken: set[str]) -> str:
    """``wanted``, or ``wanted_2``, ``wanted_3``... the first not in ``taken``; now taken."""
    got, k = wanted, 1
    while got in taken:
        k += 1
        got = f"{wanted}_{k}"
    taken.add(got)
    return got
