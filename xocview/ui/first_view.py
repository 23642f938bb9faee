"""Which groups a graph opens with: whole levels of its hierarchy while the boxes drawn stay
few enough to read at first sight."""

from __future__ import annotations

import numpy as np

from xocview.model import Graph, Hierarchy
from xocview.model.boxes import box_weights
from xocview.model.sections import LEVEL_LIMIT

__all__ = ["FIRST_VIEW_BOXES", "initial_expanded"]

FIRST_VIEW_BOXES = 300  # the first view opens groups while at most this many boxes show
FEW_BOXES = 10  # ... but a view of fewer boxes opens a level of up to LEVEL_LIMIT boxes


def initial_expanded(graph: Graph, h: Hierarchy) -> set[str]:
    """Groups open at first sight: from the top down, a level at a time, while the boxes fit.

    A level of groups opens when the boxes stay within ``FIRST_VIEW_BOXES`` after it (a level
    opens whole, so that repeated blocks look alike); a group that is the only box on screen
    always opens, and so does a group whose opening adds no box (a single-child chain), so the
    first view is never one lonely box; nor a handful: a view of fewer than ``FEW_BOXES`` boxes
    opens a level that stays within ``LEVEL_LIMIT`` (the most a level draws before sections
    split it), so a 272-layer GPT-2 opens on its layers, not on one "transformer" box. Derived
    sections (``model/sections.py``) are the one
    exception: they open one by one in their order while the boxes fit, so that a flat graph
    opens on its inputs (of parts made of parts only the first, on the way down to nodes).
    The count follows ``visible_graph`` (an expanded group becomes a frame, or stays a box when
    it has inputs or outputs of its own: If, Loop) without the constants that the drawing folds
    into their readers (``box_weights``).
    """
    n = len(graph.nodes)
    if not h.is_group.any():
        return set()
    index = graph.index
    has_io = np.diff(index.node_in_ptr[: n + 1]) + np.diff(index.node_out_ptr[: n + 1]) > 0
    weight = box_weights(graph, h)
    inside = np.bincount(h.parent + 1, weights=weight, minlength=n + 1).astype(np.int64)
    order = np.argsort(h.parent, kind="stable")
    ptr = np.searchsorted(h.parent[order], np.arange(-1, n + 1))
    kids = [order[ptr[g + 1] : ptr[g + 2]] for g in range(-1, n)]  # kids[g + 1]
    section = [nd.metadata.get("derived") == "section" for nd in graph.nodes]
    count = int(inside[0])
    expanded: set[str] = set()
    level = [int(g) for g in kids[0] if h.is_group[g]]
    while level:
        grows = {g: int(inside[g + 1]) - (0 if has_io[g] else 1) for g in level}
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
