"""Phase 4b, wrapping: a drawing much taller than wide is cut into columns, as text into lines.

A ResNet or a 40-layer transformer is a long chain; laid out in layers it is a column fifty
times taller than wide, which no window shows readably. Before routing, the layers are split
into columns of about equal height, each cut placed where the fewest edges cross (between
blocks, not through a fan-out), and the columns are set side by side. An edge that crosses a
cut leaves the bottom of its column, runs up the lane between the columns and enters the
next column from the top, each crossing edge in its own lane.

Before: layer y centres and heights, node x and widths, the rank of every node and segment.
After: a shift per column, and polylines rerouted through the lanes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Columns", "plan_columns"]

_I = np.int64
LANE = 6.0  # distance between neighbouring return lanes
MARGIN = 12.0  # from a column's last layer to its first lane
MIN_LAYERS = 1  # the fewest layers a column holds
# A drawing no taller than this is never wrapped: it fits a 1,300 x 800 canvas at a zoom where
# titles read (0.7 shows 1,140 layout units).
MIN_HEIGHT = 1140.0
# Columns are worth their lanes only when the tallest is clearly shorter than the whole: a
# top level of an input, one tall frame and an output would put the input in a column alone.
WORTH = 0.8


@dataclass(frozen=True)
class Columns:
    """Where each layer goes: its column, and the column's shift."""

    first_rank: np.ndarray  # first layer of each column
    dx: np.ndarray  # shift of each column (per column)
    dy: np.ndarray
    cut_y: np.ndarray  # unwrapped y boundaries between columns (k - 1)
    right: np.ndarray  # wrapped right edge of each column
    bottom: np.ndarray  # wrapped bottom of each column (its last layer)
    lanes: np.ndarray  # edges crossing each cut (k - 1)
    top: float  # y where the first layer of every column starts

    @property
    def count(self) -> int:
        return len(self.dx)

    def column_of_y(self, y: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.cut_y, y, side="right").astype(_I)

    def move(self, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        col = self.column_of_y(y)
        return x + self.dx[col], y + self.dy[col]

    def lines(self, lines: list[np.ndarray], sources: np.ndarray) -> list[np.ndarray]:
        """Polylines moved with their columns; a step across a cut goes through a lane, one
        lane per source (``sources[e]`` of line e), so that a fan-out crosses once."""
        used = np.zeros(max(self.count - 1, 0), dtype=_I)
        lane_of: dict[tuple[int, int], int] = {}
        out = []
        for pts, source in zip(lines, sources.tolist(), strict=True):
            col = self.column_of_y(pts[:, 1])
            moved = np.column_stack([pts[:, 0] + self.dx[col], pts[:, 1] + self.dy[col]])
            steps = np.flatnonzero(col[1:] != col[:-1])
            if not len(steps):
                out.append(moved)
                continue
            pieces = []
            start = 0
            for s in steps.tolist():
                pieces.append(moved[start : s + 1])
                a, b = int(col[s]), int(col[s + 1])
                pieces.append(self._detour(moved[s], moved[s + 1], a, b, used, lane_of, source))
                start = s + 1
            pieces.append(moved[start:])
            out.append(np.vstack(pieces))
        return out

    def _detour(
        self,
        p: np.ndarray,
        q: np.ndarray,
        a: int,
        b: int,
        used: np.ndarray,
        lane_of: dict[tuple[int, int], int],
        source: int,
    ) -> np.ndarray:
        """Corner points from p (column a) to q (a later column): down below column a, across
        to the lane after it, up above the columns and across to q (the ends not included)."""
        if b < a:  # a reversed (feedback) edge: the same lane walked backwards
            return self._detour(q, p, b, a, used, lane_of, source)[::-1]
        m = lane_of.get((a, source), -1)
        if m < 0:
            m = lane_of[(a, source)] = int(used[a])
            used[a] += 1
        lo = float(self.bottom[a]) + MARGIN + LANE * m
        lane_x = float(self.right[a]) + MARGIN + LANE * m
        hi = self.top - MARGIN - LANE * m
        return np.array([[p[0], lo], [lane_x, lo], [lane_x, hi], [q[0], hi]])


def plan_columns(
    rank: np.ndarray,
    x: np.ndarray,
    widths: np.ndarray,
    centres: np.ndarray,
    tallest: np.ndarray,
    seg_rank: np.ndarray,
    seg_origin: np.ndarray,
    *,
    max_aspect: float,
    target: float,
    gap: float,
    room: float | None = None,
) -> Columns | None:
    """Columns for a layered drawing taller than ``max_aspect`` times its width, or None.

    ``rank``/``x``/``widths`` cover every node (dummies included), ``seg_rank`` is the upper
    layer of every segment and ``seg_origin`` the real node its edge comes from (a cut costs
    one lane per source it separates from a consumer, however wide the fan-out); the number
    of columns brings height/width near ``target``. With ``room`` (a height), a drawing
    taller than it is wrapped into columns no taller than it where it can be, whatever its
    aspect; without, a drawing no taller than ``MIN_HEIGHT`` is left whole.
    """
    layers = len(centres)
    if layers < 2 or not len(x):
        return None
    top = centres - tallest / 2
    bottom = centres + tallest / 2
    height = float(bottom[-1] - top[0])
    width = float((x + widths / 2).max() - (x - widths / 2).min())
    if room is None:
        if height <= max_aspect * max(width, 1.0) or height <= MIN_HEIGHT:
            return None
    elif height <= room:  # a room is asked for: taller than it wraps, whatever its aspect
        return None
    pairs = np.unique(np.stack([seg_rank, seg_origin]), axis=1)
    crossing = np.bincount(pairs[0], minlength=layers)[: layers - 1]
    cuts = _cuts(top, bottom, crossing, height, width + gap + 2 * MARGIN + LANE, target, room)
    if not len(cuts):
        return None
    first = np.concatenate([[0], cuts + 1]).astype(_I)
    last = np.append(first[1:] - 1, layers - 1)
    if float((bottom[last] - top[first]).max()) > WORTH * height:
        return None  # a layer as tall as the rest (a frame): columns beside it only scatter

    k = len(first)
    column_of_rank = np.repeat(np.arange(k), np.diff(np.append(first, layers)))
    col = column_of_rank[rank]
    left = np.full(k, np.inf)
    right = np.full(k, -np.inf)
    np.minimum.at(left, col, x - widths / 2)
    np.maximum.at(right, col, x + widths / 2)
    lanes = crossing[cuts]
    room = 2 * MARGIN + LANE * lanes  # the lanes between column j and j + 1
    start = np.concatenate([[0.0], np.cumsum(right[:-1] - left[:-1] + room + gap)])
    lane_top = MARGIN + LANE * float(lanes.max()) if len(lanes) else 0.0
    dx = start - left
    dy = lane_top + MARGIN - top[first]
    cut_y = (bottom[cuts] + top[cuts + 1]) / 2
    return Columns(
        first_rank=first,
        dx=dx,
        dy=dy,
        cut_y=cut_y,
        right=right + dx,
        bottom=bottom[last] + dy,
        lanes=lanes,
        top=lane_top + MARGIN,
    )


_AROUND_K = 3  # column counts tried on each side of the estimate
_TOO_TALL = 100.0  # a score added to columns taller than the room: any shape that fits wins


def _cuts(
    top: np.ndarray,
    bottom: np.ndarray,
    crossing: np.ndarray,
    height: float,
    width: float,
    target: float,
    room: float | None = None,
) -> np.ndarray:
    """The last layer of every column but the last: columns of balanced height, their number
    bringing height / width nearest ``target`` (of those no taller than ``room``, when some
    are), each cut where the fewest sources cross.

    ``width`` is a column's width with the room beside it."""
    layers = len(top)
    best = np.zeros(0, dtype=_I)
    best_score = np.inf
    most = min(layers // MIN_LAYERS, 64)
    # k columns of about height / k each: the shape's ratio is height / (k * k * width), so
    # only the counts near sqrt(height / (width * target)) can be best
    near = round(float(np.sqrt(height / (max(width, 1.0) * target))))
    need = near if room is None else int(np.ceil(height / room))  # at least, to fit the room
    for k in range(max(2, near - _AROUND_K), min(most, max(near, need) + _AROUND_K) + 1):
        cuts = _partition(top, bottom, crossing, _balanced_height(top, bottom, k))
        first = np.concatenate([[0], cuts + 1])
        last = np.append(cuts, layers - 1)
        tallest = float((bottom[last] - top[first]).max())
        score = abs(np.log(tallest / (len(first) * max(width, 1.0)) / target))
        lanes = float(crossing[cuts].max()) if len(cuts) else 0.0
        if room is not None and tallest + 2 * MARGIN + LANE * lanes > room:  # lanes on top
            score += _TOO_TALL
        if score < best_score - 0.05:  # more columns only for a clearly better shape
            best, best_score = cuts, score
    return best


def _partition(
    top: np.ndarray, bottom: np.ndarray, crossing: np.ndarray, height: float
) -> np.ndarray:
    """Cuts into columns about ``height`` tall, each where the fewest sources cross."""
    layers = len(top)
    cuts: list[int] = []
    a = 0
    while bottom[-1] - top[a] > height * 1.1 and a < layers - 1:  # the rest fits: done
        hi = int(np.searchsorted(bottom, top[a] + height * 1.1, side="right")) - 1
        lo = int(np.searchsorted(bottom, top[a] + height * 0.75, side="left"))
        hi = min(max(hi, a), layers - 2)
        lo = min(max(lo, a), hi)
        cand = np.arange(lo, hi + 1)
        cut = int(cand[np.lexsort((-cand, crossing[cand]))[0]])  # fewest, then latest
        rest = bottom[-1] - top[cut + 1]
        if rest < 0.3 * height and bottom[-1] - top[a] <= height * 1.4:
            break  # no column for a short tail: the last one grows a little instead
        cuts.append(cut)
        a = cut + 1
    return np.asarray(cuts, dtype=_I)


def _balanced_height(top: np.ndarray, bottom: np.ndarray, k: int) -> float:
    """The least column height that holds all layers in ``k`` columns (binary search on the
    height, each test a greedy packing by ``searchsorted``)."""
    lo = float((bottom - top).max())
    hi = float(bottom[-1] - top[0])
    for _ in range(32):
        mid = (lo + hi) / 2
        a, used = 0, 0
        while a < len(top) and used <= k:
            a = int(np.searchsorted(bottom, top[a] + mid, side="right"))
            used += 1
        if a >= len(top) and used <= k:
            hi = mid
        else:
            lo = mid
        if hi - lo < 1.0:
            break
    return hi
