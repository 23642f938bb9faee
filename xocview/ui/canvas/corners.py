"""Which corner of the canvas an overlay (the minimap, a legend, a comparison's key) sits in:
the first of its corners in which it covers none of the rectangles to keep clear (the box
under the cursor, the selected box, another overlay), else the one where it covers least.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QRectF, QSizeF

__all__ = ["BOTTOM_LEFT", "BOTTOM_RIGHT", "TOP_LEFT", "TOP_RIGHT", "corner_rect", "place"]

BOTTOM_RIGHT, BOTTOM_LEFT, TOP_RIGHT, TOP_LEFT = (
    "bottom right",
    "bottom left",
    "top right",
    "top left",
)
MARGIN = 8.0


def corner_rect(port: QRectF, size: QSizeF, corner: str, margin: float = MARGIN) -> QRectF:
    """The rectangle of ``size`` in ``corner`` of ``port``, ``margin`` from its edges."""
    right = corner in (BOTTOM_RIGHT, TOP_RIGHT)
    bottom = corner in (BOTTOM_RIGHT, BOTTOM_LEFT)
    x = port.right() - margin - size.width() if right else port.left() + margin
    y = port.bottom() - margin - size.height() if bottom else port.top() + margin
    return QRectF(x, y, size.width(), size.height())


def place(
    port: QRectF,
    size: QSizeF,
    corners: Sequence[str],
    keep_clear: Sequence[QRectF] = (),
    margin: float = MARGIN,
) -> QRectF:
    """Where an overlay of ``size`` goes in ``port``: the first of ``corners`` (in order of
    preference) where it meets none of ``keep_clear``, else where it covers the least of them."""
    best = (float("inf"), corner_rect(port, size, BOTTOM_RIGHT, margin))
    for corner in corners:
        rect = corner_rect(port, size, corner, margin)
        covered = sum(_area(rect.intersected(r)) for r in keep_clear if rect.intersects(r))
        if covered == 0:
            return rect
        if covered < best[0]:
            best = (covered, rect)
    return best[1]


def _area(r: QRectF) -> float:
    return max(r.width(), 0.0) * max(r.height(), 0.0)
