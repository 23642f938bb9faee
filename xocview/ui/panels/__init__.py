"""Dock panels: the inspector of the selection and the graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from xocview.ui.document import Document

__all__ = ["follow"]


def follow(
    old: Document | None, new: Document | None, signal: str, slot: Callable[[], None]
) -> Document | None:
    """Move ``slot`` from ``old``'s ``signal`` to ``new``'s (a pane switching tabs); returns
    ``new``."""
    if old is not None:
        getattr(old, signal).disconnect(slot)
    if new is not None:
        getattr(new, signal).connect(slot)
    return new
