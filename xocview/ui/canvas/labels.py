"""Where each tensor's shape label goes: beside its edge, clear of boxes, frame titles and the
other labels, or nowhere.

Labels drawn at one fixed spot per edge printed over each other and under boxes. Here each
tensor gets one label (a tensor read by several nodes is labelled once, near its producer),
placed greedily as map labelling does: candidate rectangles beside the edge's segments (both
sides, a few spots along each, nearest the producer first, and on the line as a last resort);
the first whose halo meets no box, no frame title band and no label placed before wins. The
full text beats the text on two lines (what fits between the narrow ranks of a left-to-right
drawing); clear spots beat spots over an edge; a shortened text comes last, and a label with
no spot at all stays hidden (the inspector still shows the shape).

No Qt here: the painter passes its font's measures, so that tests check the very rectangles
that are painted. Obstacles are found with numpy over a uniform grid (``spatial``), so 5,000
edges place in a fraction of a second.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from xocview.ui.canvas.drawing import ELLIPSIS, Drawing
from xocview.ui.canvas.spatial import Grid, Rects, crosses_any, meets_any

__all__ = ["Placement", "Stopped", "forms", "place_labels", "shorten", "title_band", "wrap"]

HALO = 2.0  # clear space kept between a label and anything else (scene units)
PAD = 1.5  # text to the label rectangle's left and right sides
GAP = 4.0  # edge line to the nearest corner of its label
ALONG = (0.5, 0.3, 0.7, 0.15, 0.85)  # spots along a segment, best first
SIDES = (1.0, -1.0, 0.0)  # right of a downward segment (above a rightward one), left, on it
MAX_SEGMENTS = 6  # per edge: a label far from its producer no longer reads as its tensor's
MAX_EDGES = 8  # per tensor: the first edges of a tensor read by many nodes offer enough room
BOUNDS = 20.0  # how far a label may reach beyond the drawing (render and view add margins)
UNLABELLED = ("", "?")
# preference by form (full, two lines, shortened) and by clear (0) or over a line (1)
TIERS = np.array([[0, 2], [1, 3], [4, 5]])


@dataclass(frozen=True)
class Placement:
    """The placed labels: rectangles (left, top, width, height), texts (one or two lines),
    edges and tensors."""

    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    h: np.ndarray
    text: list[str]
    edge: np.ndarray
    tensor: np.ndarray
    wanted: int  # tensors that have a label: placed ones and hidden ones

    @property
    def count(self) -> int:
        return len(self.x)

    @property
    def hidden(self) -> int:
        return self.wanted - self.count

    def visible(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        """Indices of labels that meet the rectangle."""
        return np.flatnonzero(
            (self.x + self.w >= x0) & (self.x <= x1) & (self.y + self.h >= y0) & (self.y <= y1)
        )


def title_band(outline: np.ndarray) -> tuple[float, float, float, float]:
    """A frame's title band (left, top, width, height): where its title and collapse control
    are drawn and clicked, between the outline's first right point and its last left point.
    Here, not in the painter, so that labels keep out of the very band that is painted."""
    right, left = outline[0], outline[-1]
    return float(left[0] + 6), float(right[1] + 2), max(float(right[0] - left[0] - 12), 10.0), 14.0


def shorten(text: str) -> str:
    """A shorter form of a shape label for tight spots: the middle dimensions elided
    (``1x64x56x56`` -> ``1x…x56``), other texts cut in the middle; ``text`` if none is shorter."""
    dims = text.split("x")
    if len(dims) >= 3 and all(dims):
        short = f"{dims[0]}x{ELLIPSIS}x{dims[-1]}"
    else:
        keep = len(text) // 2
        short = text[: (keep + 1) // 2] + ELLIPSIS + text[len(text) - keep // 2 :]
    return short if len(short) < len(text) else text


def wrap(text: str) -> str:
    """A shape label on two lines, cut after the ``x`` that best balances them
    (``1x64x112x112`` -> ``1x64x`` / ``112x112``); ``text`` when it has no ``x``."""
    cuts = [i + 1 for i, c in enumerate(text[:-1]) if c == "x"]
    if not cuts:
        return text
    cut = min(cuts, key=lambda i: max(i, len(text) - i))
    return f"{text[:cut]}\n{text[cut:]}"


def forms(text: str) -> tuple[str, str, str]:
    """The forms a label may take, best first: in full, on two lines, shortened; "" for a form
    that would be no shorter than the full text."""
    two, short = wrap(text), shorten(text)
    return text, two if two != text else "", short if short != text else ""


class Stopped(Exception):
    """``place_labels`` was told to stop: its drawing is no longer shown."""


def place_labels(
    d: Drawing,
    width_of: Callable[[str], float],
    height: float,
    stop: Callable[[], bool] | None = None,
) -> Placement:
    """One label per labelled tensor of ``d``, placed where it overlaps nothing, or hidden.

    ``width_of`` measures one line of text and ``height`` is a line's height, both in scene
    units (the painter's font metrics). Tensors are served top to bottom, left to right.
    ``stop()`` is asked between the phases; when it says so, Stopped is raised (a placement
    for a drawing that an expand or collapse replaced would hold the GIL for a second).
    """

    def check() -> None:
        if stop is not None and stop():
            raise Stopped

    edges = _labelled_edges(d)
    if not len(edges):
        return _empty()
    tensors, first = np.unique(d.edge_tensor[edges], return_index=True)
    starts = np.array([d.edges[e][0] for e in edges[first].tolist()]).reshape(-1, 2)
    prio = np.empty(len(tensors), dtype=np.int64)
    prio[np.lexsort((starts[:, 0], starts[:, 1]))] = np.arange(len(tensors))
    texts = [forms(d.edge_label[e]) for e in edges[first].tolist()]
    slot = np.searchsorted(tensors, d.edge_tensor[edges])  # each edge's tensor, 0..len-1
    rank = _rank_within(slot)  # an edge's place among its tensor's edges
    keep = rank < MAX_EDGES
    edges, slot, rank = edges[keep], slot[keep], rank[keep]

    check()
    widths, heights = _sizes(texts, width_of, height)
    check()
    seg = _segments(d, edges)
    scene = _Scene(_obstacles(d), _lines(d), _area(d), prio)
    placed = Grid()
    todo = np.ones(len(tensors), dtype=bool)
    picked: list[_Candidates] = []
    for stage in (0, 1):
        check()
        cand = _stage(stage, seg, slot, rank, widths, heights, todo)
        check()
        order = scene.ranked(cand, check)
        check()
        chosen = cand.take(_greedy(cand, order, placed))
        todo[chosen.slot] = False
        picked.append(chosen)
    x0, y0, x1, y1, t_slot, form, edge = (
        np.concatenate([getattr(c, f) for c in picked])
        for f in ("x0", "y0", "x1", "y1", "slot", "form", "edge")
    )
    return Placement(
        x=x0,
        y=y0,
        w=x1 - x0,
        h=y1 - y0,
        text=[texts[s][f] for s, f in zip(t_slot.tolist(), form.tolist(), strict=True)],
        edge=edges[edge],
        tensor=tensors[t_slot],
        wanted=len(tensors),
    )


def _stage(
    stage: int,
    seg: _Segments,
    slot: np.ndarray,
    rank: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    todo: np.ndarray,
) -> _Candidates:
    """The candidates of one stage for the tensors still ``todo``.

    Most labels fit beside a first segment, in full or on two lines: stage 0 tries only that,
    for every tensor, and stage 1 the rest (further segments, the shortened text) for the
    tensors left, so that the costly checks run on a fraction of all candidates.
    """
    on = todo[slot[seg.edge]]
    if stage == 0:
        on &= seg.k == 0
        widths = widths.copy()
        widths[:, 2] = np.nan
    cand = _candidates(seg.take(np.flatnonzero(on)), slot, rank, widths, heights)
    if stage == 0:
        return cand
    return cand.take(np.flatnonzero((cand.k > 0) | (cand.form == 2)))


@dataclass(frozen=True)
class _Scene:
    """What candidates are weighed against: obstacles (boxes and frame title bands), lines
    (edges and frame outlines), the area labels may use, and the tensors' priorities."""

    obstacles: Rects
    lines: tuple[np.ndarray, np.ndarray]
    area: tuple[tuple[float, float], tuple[float, float]]
    prio: np.ndarray

    def ranked(self, cand: _Candidates, check: Callable[[], None]) -> np.ndarray:
        """The candidates that meet no obstacle and stay in the area, grouped by tensor in
        priority order, each tensor's best first (``check()`` between the two tests)."""
        (lx, ly), (hx, hy) = self.area
        inside = (cand.x0 >= lx) & (cand.y0 >= ly) & (cand.x1 <= hx) & (cand.y1 <= hy)
        grown = cand.grown(HALO)
        order = np.flatnonzero(inside)
        order = order[~meets_any(_rows(grown, order), self.obstacles)]
        check()
        # A label may cover a stretch of an edge or a frame's outline (its halo fades it)
        # where no clear spot is left; a cut text comes last: it loses what labels are for.
        crossing = crosses_any(_rows(grown, order), *self.lines)
        tier = TIERS[cand.form[order], crossing.astype(np.int64)]
        return order[np.lexsort((cand.key[order], tier, self.prio[cand.slot[order]]))]


def _rows(r: Rects, idx: np.ndarray) -> Rects:
    return r[0][idx], r[1][idx], r[2][idx], r[3][idx]


def _sizes(
    texts: list[tuple[str, str, str]], width_of: Callable[[str], float], height: float
) -> tuple[np.ndarray, np.ndarray]:
    """Width and height of each tensor's label in each form (NaN where a form is missing)."""
    measured: dict[str, float] = {}

    def width(text: str) -> float:
        if text not in measured:
            measured[text] = max(float(width_of(line)) for line in text.split("\n")) + 2 * PAD
        return measured[text]

    w = np.array([[width(t) if t else np.nan for t in fs] for fs in texts]).reshape(-1, 3)
    h = np.array([[height * (t.count("\n") + 1) for t in fs] for fs in texts]).reshape(-1, 3)
    return w, h


def _area(d: Drawing) -> tuple[tuple[float, float], tuple[float, float]]:
    """The area labels may use: the drawing and a margin the view and exports show."""
    return (-BOUNDS, -BOUNDS), (d.width + BOUNDS, d.height + BOUNDS)


def _empty() -> Placement:
    z = np.zeros(0)
    return Placement(z, z, z, z, [], np.zeros(0, np.int64), np.zeros(0, np.int64), 0)


def _labelled_edges(d: Drawing) -> np.ndarray:
    return np.array(
        [
            e
            for e, (text, pts) in enumerate(zip(d.edge_label, d.edges, strict=True))
            if text not in UNLABELLED and len(pts) >= 2
        ],
        dtype=np.int64,
    )


def _rank_within(group: np.ndarray) -> np.ndarray:
    """Each element's position among the elements of its group, in array order."""
    order = np.argsort(group, kind="stable")
    sorted_group = group[order]
    starts = np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]])
    first_of = np.repeat(starts, np.diff(np.r_[starts, len(group)]))
    rank = np.empty(len(group), dtype=np.int64)
    rank[order] = np.arange(len(group)) - first_of
    return rank


@dataclass(frozen=True)
class _Segments:
    edge: np.ndarray  # position in the labelled-edge list
    k: np.ndarray  # segment index along its edge
    a: np.ndarray  # (n, 2) start points
    b: np.ndarray  # (n, 2) end points

    def take(self, idx: np.ndarray) -> _Segments:
        return _Segments(self.edge[idx], self.k[idx], self.a[idx], self.b[idx])


def _segments(d: Drawing, edges: np.ndarray) -> _Segments:
    """The first MAX_SEGMENTS segments of each edge, as flat arrays."""
    polylines = [d.edges[e] for e in edges.tolist()]
    lengths = np.fromiter((len(p) for p in polylines), dtype=np.int64, count=len(polylines))
    points = np.concatenate(polylines).astype(np.float64)
    offsets = np.r_[0, np.cumsum(lengths)[:-1]]
    per_edge = np.minimum(lengths - 1, MAX_SEGMENTS)
    edge = np.repeat(np.arange(len(edges)), per_edge)
    k = np.arange(int(per_edge.sum())) - np.repeat(np.cumsum(per_edge) - per_edge, per_edge)
    start = offsets[edge] + k
    a, b = points[start], points[start + 1]
    ok = np.hypot(*(b - a).T) > 1e-6  # a zero-length segment has no sides
    return _Segments(edge[ok], k[ok], a[ok], b[ok])


@dataclass(frozen=True)
class _Candidates:
    x0: np.ndarray
    y0: np.ndarray
    x1: np.ndarray
    y1: np.ndarray
    slot: np.ndarray  # the tensor (0..len-1) each candidate labels
    edge: np.ndarray  # position in the labelled-edge list
    form: np.ndarray  # 0 full text, 1 on two lines, 2 shortened
    k: np.ndarray  # the segment's index along its edge
    key: np.ndarray  # preference among one tensor's candidates of one form, lowest first

    def grown(self, m: float) -> Rects:
        return self.x0 - m, self.y0 - m, self.x1 + m, self.y1 + m

    def take(self, idx: np.ndarray | list[int]) -> _Candidates:
        i = np.asarray(idx, dtype=np.int64)
        return _Candidates(
            self.x0[i],
            self.y0[i],
            self.x1[i],
            self.y1[i],
            self.slot[i],
            self.edge[i],
            self.form[i],
            self.k[i],
            self.key[i],
        )


def _candidates(
    seg: _Segments, slot: np.ndarray, rank: np.ndarray, widths: np.ndarray, heights: np.ndarray
) -> _Candidates:
    """Rectangles beside every segment, on both sides and at every ALONG spot, in every form
    its tensor's label has (``slot`` and ``rank``: each edge's tensor and place among that
    tensor's edges; ``widths``/``heights``: per tensor and form, NaN where missing).

    A rectangle sits off the segment's line along its normal by GAP plus the rectangle's
    half-extent in that direction, so that it clears the line whatever the segment's slope:
    right or left of a downward edge, above or below a rightward one. The last resort is on
    the line itself (its halo cuts the edge): the only spot that fits between two boxes on a
    slanted edge.
    """
    n_seg, n_form, n_along = len(seg.k), widths.shape[1], len(ALONG)
    shape = (n_seg, n_form, n_along, len(SIDES))  # segment, form, spot along, side
    grids = np.indices(shape).reshape(4, -1)
    s_idx, form, along_i, side_i = grids
    t_slot = slot[seg.edge[s_idx]]
    w, h = widths[t_slot, form], heights[t_slot, form]
    ok = ~np.isnan(w)
    s_idx, form, along_i, side_i, t_slot, w, h = (
        v[ok] for v in (s_idx, form, along_i, side_i, t_slot, w, h)
    )
    a, b = seg.a[s_idx], seg.b[s_idx]
    u = (b - a) / np.hypot(*(b - a).T)[:, None]
    side = np.asarray(SIDES)[side_i]
    nx, ny = u[:, 1] * side, -u[:, 0] * side
    off = GAP + w / 2 * np.abs(nx) + h / 2 * np.abs(ny)
    t = np.asarray(ALONG)[along_i]
    cx = a[:, 0] + t * (b[:, 0] - a[:, 0]) + nx * off
    cy = a[:, 1] + t * (b[:, 1] - a[:, 1]) + ny * off
    # segments nearest the producer first, then the tensor's edges, spots along, sides
    e_rank = rank[seg.edge[s_idx]]
    key = ((seg.k[s_idx] * MAX_EDGES + e_rank) * n_along + along_i) * len(SIDES) + side_i
    return _Candidates(
        cx - w / 2,
        cy - h / 2,
        cx + w / 2,
        cy + h / 2,
        t_slot,
        seg.edge[s_idx],
        form,
        seg.k[s_idx],
        key,
    )


def _obstacles(d: Drawing) -> Rects:
    """Boxes and frame title bands, as (x0, y0, x1, y1) arrays."""
    bands = np.array([title_band(o) for _, o in d.frames], dtype=np.float64).reshape(-1, 4)
    return (
        np.r_[d.x - d.w / 2, bands[:, 0]],
        np.r_[d.y - d.h / 2, bands[:, 1]],
        np.r_[d.x + d.w / 2, bands[:, 0] + bands[:, 2]],
        np.r_[d.y + d.h / 2, bands[:, 1] + bands[:, 3]],
    )


def _lines(d: Drawing) -> tuple[np.ndarray, np.ndarray]:
    """Every segment of every edge and frame outline: (n, 2) start and end points."""
    polylines = [p for p in d.edges if len(p) >= 2]
    polylines += [np.vstack([o, o[:1]]) for _, o in d.frames if len(o)]
    if not polylines:
        return np.zeros((0, 2)), np.zeros((0, 2))
    points = np.concatenate(polylines).astype(np.float64)
    last = np.cumsum([len(p) for p in polylines]) - 1
    start = np.setdiff1d(np.arange(len(points) - 1), last[:-1])
    return points[start], points[start + 1]


def _greedy(cand: _Candidates, order: np.ndarray, placed: Grid) -> list[int]:
    """The first candidate of each tensor (in ``order``, grouped by tensor) whose halo meets
    no label in ``placed``, which it joins; a tensor whose candidates all meet one is left.

    Most tensors take their first candidate, so candidates are read one by one from the
    arrays rather than all turned into Python numbers first."""
    if not len(order):
        return []
    slots = cand.slot[order]
    starts = np.flatnonzero(np.r_[True, slots[1:] != slots[:-1]])
    gx0, gy0, gx1, gy1 = cand.grown(HALO)
    chosen: list[int] = []
    for lo, hi in zip(starts.tolist(), np.r_[starts[1:], len(order)].tolist(), strict=True):
        for i in order[lo:hi].tolist():
            if not placed.meets(float(gx0[i]), float(gy0[i]), float(gx1[i]), float(gy1[i])):
                placed.add(
                    float(cand.x0[i]), float(cand.y0[i]), float(cand.x1[i]), float(cand.y1[i])
                )
                chosen.append(i)
                break
    return chosen
