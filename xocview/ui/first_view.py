"""Which groups a graph opens with.

A graph with a hierarchy of its own (scopes, functions, XOC groups, bodies) opens at the
deepest level whose drawing fits a window at a zoom where box titles read (``FIT``), tried by
laying it out; a flat graph split into derived sections opens its parts while the boxes stay
few enough to read at first sight.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

import numpy as np

from xocview.layout.wrap import MIN_HEIGHT
from xocview.model import Graph, Hierarchy
from xocview.model.boxes import BoxCounts
from xocview.model.sections import LEVEL_LIMIT
from xocview.ui.canvas.drawing import KIND_GROUP, KIND_NODE, Drawing, build_drawing

__all__ = [
    "FIRST_VIEW_BOXES",
    "FIT",
    "MIN_BOXES",
    "boxes_of",
    "first_view_state",
    "fits",
    "initial_expanded",
    "laid_out",
]

FIRST_VIEW_BOXES = 300  # sections open while at most this many boxes show
FEW_BOXES = 10  # ... but a view of fewer boxes opens a level of up to LEVEL_LIMIT boxes
# The drawing of a first view fits this (layout units = pixels at 100%): a 1,300 x 800 canvas
# at zoom 0.7, where 10 pt titles are about 9 px tall.
FIT = (1860.0, 1140.0)
MIN_BOXES = 8  # a first view shows at least this many boxes when the graph has them
TRIALS = 24  # layouts tried at most: the first view of a 100k-node graph stays prompt
FORCED_TRIES = 4  # classes laid out to choose each opening forced by MIN_BOXES
TRY_BOXES = 260  # an opening that would draw more boxes than this cannot fit: not tried
MARGIN_Y = 24.0  # a wrap height is lowered by the overflow and twice this

SQUEEZES = 3  # lower wrap heights tried when the chosen view is too tall but not too wide
LOWEST_WRAP = 400.0  # ... down to this: below, columns of a few boxes help no one


class Layout(Protocol):
    """Lays out a set of open groups (levels taller than ``wrap_height`` wrap into columns)."""

    def __call__(self, expanded: set[str], wrap_height: float | None = None) -> Drawing: ...


def initial_expanded(graph: Graph, h: Hierarchy, layout: Layout | None = None) -> set[str]:
    """Groups open at first sight (see the module's docstring)."""
    return first_view_state(graph, h, layout)[0]


def first_view_state(
    graph: Graph, h: Hierarchy, layout: Layout | None = None
) -> tuple[set[str], Drawing | None]:
    """The groups open at first sight, and their drawing when it was laid out to choose them
    (``layout`` lays out a set of open groups; by default ``build_drawing``)."""
    if not h.is_group.any():
        return set(), None
    section = np.fromiter(
        (nd.metadata.get("derived") == "section" for nd in graph.nodes), bool, len(graph.nodes)
    )
    if not (h.is_group & ~section).any():
        return _by_boxes(graph, h, section.tolist()), None
    return _Fitting(graph, h, layout or laid_out(graph)).run()


def laid_out(graph: Graph, **options: Any) -> Layout:
    """``build_drawing`` of ``graph`` with ``options`` (direction, progress...) as a
    ``Layout`` of the open groups and the wrap height."""

    def lay_out(expanded: set[str], wrap_height: float | None = None) -> Drawing:
        return build_drawing(graph, expanded, wrap_height=wrap_height, **options)

    return lay_out


def boxes_of(d: Drawing) -> int:
    return int(((d.kind == KIND_NODE) | (d.kind == KIND_GROUP)).sum())


def fits(d: Drawing) -> bool:
    return d.width <= FIT[0] and d.height <= FIT[1]


class _Fitting:
    """Opens groups a class at a time (repeated blocks alike: ``layer.0`` .. ``layer.11`` of
    one parent), the classes holding most of the graph first, keeping an opening when the
    drawing still fits. The opening of the first levels is forced while fewer than
    ``MIN_BOXES`` boxes show, so that the first view is never one lonely box."""

    def __init__(self, graph: Graph, h: Hierarchy, layout: Layout) -> None:
        self.graph, self.h, self.layout = graph, h, layout
        counts = BoxCounts.of(graph, h)
        self.grows = counts.grows()
        self.top_count = int(counts.inside[0])
        self.size = counts.total
        self.cluster = [nd.metadata.get("derived") == "cluster" for nd in graph.nodes]
        self.kids = _children(h)

    def group_kids(self, g: int) -> list[int]:
        return [int(c) for c in self.kids[g + 1] if self.h.is_group[c]]

    def run(self) -> tuple[set[str], Drawing | None]:
        self.expanded: set[str] = set()
        self.count = self.top_count
        self.frontier = self.group_kids(-1)
        self.open_chains()
        self.open_until_enough()
        drawing = self.layout(self.expanded)
        tries = 0
        refused: set[int] = set()  # groups whose opening made the drawing overflow
        while fits(drawing) and tries < TRIALS:
            opened = False
            for cls in _classes(self.graph, self.frontier, self.h, self.size):
                if (
                    cls[0] in refused
                    or self.cluster[cls[0]]  # loose operators put out of the way: not opened
                    or self.count + int(self.grows[cls].sum()) > TRY_BOXES
                    or tries >= TRIALS
                ):
                    continue
                tries += 1
                trial = self.expanded | {self.graph.nodes[g].id for g in cls}
                d = self.layout(trial)
                if fits(d):
                    self.open(cls)
                    self.open_chains()
                    drawing = d if self.expanded == trial else self.layout(self.expanded)
                    opened = True
                    break
                refused.update(cls)
            if not opened:
                break
        return self.expanded, self.squeezed(drawing)

    def squeezed(self, d: Drawing) -> Drawing:
        """``d``, or where it is too tall but not too wide, the same view with its tall frames
        wrapped lower: a frame wraps only when it alone is taller than the window, so a frame
        that almost fills it, below inputs and above outputs, runs past the bottom. The wrap
        height goes down by the overflow until the drawing fits (kept only if it does)."""
        height = MIN_HEIGHT
        tried = d
        for _ in range(SQUEEZES):
            if fits(tried) or tried.width > FIT[0]:
                break
            height -= tried.height - FIT[1] + 2 * MARGIN_Y
            if height < LOWEST_WRAP:
                break
            tried = self.layout(self.expanded, wrap_height=height)
        return tried if fits(tried) else d

    def open(self, groups: list[int]) -> None:
        self.expanded.update(self.graph.nodes[g].id for g in groups)
        self.count += int(self.grows[groups].sum())
        self.frontier = [g for g in self.frontier if g not in groups] + [
            c for g in groups for c in self.group_kids(g)
        ]

    def open_chains(self) -> None:
        """Open what adds no box (a group around a single group, a group around everything),
        until nothing is left to open that way. A group around a single operator stays a box
        (``wte`` over its Gather), however deep: opened, it is the same box in frames that cost
        room."""
        while chains := [
            g
            for g in self.frontier
            if (self.grows[g] <= 0 and not self.around_one_op(g)) or self.count <= 1
        ]:
            self.open(chains)

    def around_one_op(self, g: int) -> bool:
        """``g`` holds one box however far it is opened (``lm_head`` > ``linear`` > MatMul)."""
        return bool(self.size[g] <= 1)

    def open_until_enough(self) -> None:
        """Too few boxes show: open classes until ``MIN_BOXES`` do (a lone box tells nothing,
        even when the drawing then overflows the window). Each step lays out the few biggest
        classes and opens the one whose drawing overflows least (the biggest of those that
        fit); derived clusters only when nothing else is left."""
        while self.count < MIN_BOXES and self.frontier:
            classes = _classes(self.graph, self.frontier, self.h, self.size)
            own = [c for c in classes if not self.cluster[c[0]]] or classes
            room = [c for c in own if self.count + int(self.grows[c].sum()) <= TRY_BOXES]
            if not room:
                self.open(min(own, key=lambda c: int(self.grows[c].sum())))
            else:
                self.open(min(room[:FORCED_TRIES], key=self.overflow))
            self.open_chains()

    def overflow(self, cls: list[int]) -> float:
        """How far the drawing with ``cls`` open runs past ``FIT`` (0: it fits)."""
        d = self.layout(self.expanded | {self.graph.nodes[g].id for g in cls})
        return max(d.width - FIT[0], 0.0) + max(d.height - FIT[1], 0.0)


def _children(h: Hierarchy) -> list[np.ndarray]:
    """Each group's children, ascending: ``kids[g + 1]`` (``kids[0]``: the top level)."""
    n = len(h.parent)
    order = np.argsort(h.parent, kind="stable")
    ptr = np.searchsorted(h.parent[order], np.arange(-1, n + 1))
    return [order[ptr[g + 1] : ptr[g + 2]] for g in range(-1, n)]


_DIGITS = re.compile(r"\d+")


def _classes(graph: Graph, frontier: list[int], h: Hierarchy, size: np.ndarray) -> list[list[int]]:
    """The frontier's groups in classes of repeated blocks (one depth, one id but for its
    numbers: ``/encoder/layer.0/attn`` and ``/encoder/layer.1/attn``), the classes holding
    most boxes first."""
    by_key: dict[tuple[int, str], list[int]] = {}
    for g in frontier:
        key = (int(h.depth[g]), _DIGITS.sub("#", graph.nodes[g].id))
        by_key.setdefault(key, []).append(g)
    return sorted(by_key.values(), key=lambda cls: -float(size[cls].sum()))


def _by_boxes(graph: Graph, h: Hierarchy, section: list[bool]) -> set[str]:
    """Derived sections of a flat graph: whole levels while the boxes fit, sections one by one
    in their order (so that the graph opens on its inputs; of parts made of parts only the
    first, on the way down to nodes)."""
    counts = BoxCounts.of(graph, h)
    grown = counts.grows()
    kids = _children(h)
    count = int(counts.inside[0])
    expanded: set[str] = set()
    level = [int(g) for g in kids[0] if h.is_group[g]]
    while level:
        grows = {g: int(grown[g]) for g in level}
        nested = any(section[g] and _holds_sections(g, section, kids, h) for g in level)
        budget = FIRST_VIEW_BOXES if count >= FEW_BOXES else LEVEL_LIMIT
        if count > 1 and (nested or count + sum(grows.values()) > budget):
            chains = [g for g in level if grows[g] <= 0]  # a whole level, or only its chains
            room = count + sum(grows[g] for g in chains)
            level = chains + _sections_that_fit(level, grows, room, section, kids, h)
        expanded.update(graph.nodes[g].id for g in level)
        count += sum(grows[g] for g in level)
        level = [int(c) for g in level for c in kids[g + 1] if h.is_group[c]]
    return expanded


def _sections_that_fit(
    level: list[int],
    grows: dict[int, int],
    count: int,
    section: list[bool],
    kids: list[np.ndarray],
    h: Hierarchy,
) -> list[int]:
    """The first sections of ``level`` (in their order) that open within the budget from
    ``count`` boxes; of sections made of sections only the first, so that the boxes left go to
    opening its own first parts, down to the graph's nodes."""
    out: list[int] = []
    for g in level:
        if not section[g] or grows[g] <= 0:
            continue
        if count + grows[g] > FIRST_VIEW_BOXES:
            break
        out.append(g)
        count += grows[g]
        if _holds_sections(g, section, kids, h):
            break
    return out


def _holds_sections(g: int, section: list[bool], kids: list[np.ndarray], h: Hierarchy) -> bool:
    return any(section[int(c)] for c in kids[g + 1] if h.is_group[c])
