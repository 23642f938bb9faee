"""The keys of JSON objects that a reader passes over, for ``check`` to warn about each."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Set
from typing import Any

__all__ = ["unread_keys"]


def unread_keys(entries: Iterable[tuple[str, Any]], known: Set[str]) -> Iterator[str]:
    """The place (``entry place.key``, or ``key`` for an empty entry place) of every key of
    each (place, object) entry that is not in ``known``; entries that are no object are
    left to the reader's own errors."""
    for place, entry in entries:
        if type(entry) is dict and not entry.keys() <= known:
            for key in entry:
                if key not in known:
                    yield f"{place}.{key}" if place else str(key)
