"""What the canvas paints, as arrays: boxes, labels, edge polylines and group frames.

Built from the model's visible graph and the layout; no Qt here, so that building a drawing
for 50k nodes is numpy work and the painter only reads arrays. Weights are folded into the
boxes of the nodes that read them (one row each, ``W 64x3x7x7``) unless drawn as nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

import numpy as np

from xocview.layout.nested import NestedState, NestKeys, nested_layout
from xocview.layout.polylines import Polylines
from xocview.model import Graph, Hierarchy, Node, VisibleGraph, visible_graph
from xocview.model.analyses import opfacts
from xocview.model.boxes import CONSTANT_OPS
from xocview.ui.canvas.body_feeds import feed_body_inputs
from xocview.ui.canvas.box_texts import (
    BADGE,
    CHAR_W,
    ELLIPSIS,
    KIND_GROUP,
    KIND_NODE,
    KIND_TENSOR,
    LABEL_CHARS,
    ROW_H,
    BoxTexts,
    elide,
    weight_rows,
)
from xocview.ui.canvas.input_places import inputs_above_readers
from xocview.ui.canvas.visible_items import branch_frames, fold_constants, place_body_inputs

__all__ = [
    "BADGE",
    "CONSTANT_OPS",
    "ELLIPSIS",
    "KIND_GROUP",
    "KIND_NODE",
    "KIND_TENSOR",
    "LABEL_CHARS",
    "ROW_H",
    "Drawing",
    "build_drawing",
    "edge_points",
    "elide",
    "weight_rows",
]

# A drawing taller than this many times its width is wrapped into columns, brought near
# WRAP_TARGET (height / width) so that a long chain fills a window instead of a strip.
WRAP_ASPECT = 1.8
WRAP_TARGET = 0.6
LR_RANK_SEP = 88.0


@dataclass
class Drawing:
    """Boxes (centre x, y, width, height), their kinds and labels, edges and frames."""

    x: np.ndarray
    y: np.ndarray
    w: np.ndarray
    h: np.ndarray
    kind: np.ndarray
    title: list[str]
    detail: list[str]
    category: list[str]
    item_node: np.ndarray  # node position of each item, -1 for tensor items
    item_tensor: np.ndarray  # tensor position of each item, -1 for node items
    edges: Sequence[np.ndarray]  # one polyline per edge (Polylines: views of one array)
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_tensor: np.ndarray
    edge_label: list[str]
    frames: list[tuple[int, np.ndarray]] = field(default_factory=list)  # (group, outline)
    frame_titles: list[str] = field(default_factory=list)
    frame_depth: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    keys: list[str] = field(default_factory=list)  # node or tensor id of each box
    width: float = 0.0
    height: float = 0.0
    edge_box: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    # the weights folded into each box, one "role shape" text per row (empty when drawn as nodes)
    rows: list[tuple[str, ...]] = field(default_factory=list)
    weights_as_nodes: bool = False
    # what the painter builds once per drawing (its own objects, opaque here)
    paint_cache: dict[str, object] = field(default_factory=dict, repr=False, compare=False)
    # the layout's state and the graph index it was made for: the next layout of the same
    # graph state redoes only what changed (nested_layout's ``previous``)
    layout_state: object = field(default=None, repr=False, compare=False)
    layout_of: object = field(default=None, repr=False, compare=False)
    # the height a level wraps into columns within (None: the layout's own rule); relayouts
    # keep it
    wrap_height: float | None = None

    @property
    def count(self) -> int:
        return len(self.x)

    def item_at(self, px: float, py: float) -> int:
        """The item under a scene point, or -1 (the smallest box wins where boxes overlap)."""
        hit = np.flatnonzero(
            (np.abs(self.x - px) <= self.w / 2) & (np.abs(self.y - py) <= self.h / 2)
        )
        if not len(hit):
            return -1
        return int(hit[np.argmin(self.w[hit] * self.h[hit])])

    def visible(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        """Indices of items whose boxes meet the rectangle."""
        return np.flatnonzero(
            (self.x + self.w / 2 >= x0)
            & (self.x - self.w / 2 <= x1)
            & (self.y + self.h / 2 >= y0)
            & (self.y - self.h / 2 <= y1)
        )

    def visible_edges(self, x0: float, y0: float, x1: float, y1: float) -> np.ndarray:
        b = self.edge_box
        return np.flatnonzero((b[:, 2] >= x0) & (b[:, 0] <= x1) & (b[:, 3] >= y0) & (b[:, 1] <= y1))


def build_drawing(
    graph: Graph,
    expanded: Collection[str] = (),
    *,
    direction: str = "TB",
    show_weights: bool = False,
    order_hint: dict[str, float] | None = None,
    categories: Callable[[str], str] = opfacts.category,
    details: Callable[[Node], str] = opfacts.key_attributes,
    progress: Callable[[int, int], None] | None = None,
    previous: Drawing | None = None,
    wrap_height: float | None = None,
) -> Drawing:
    """Lay out the visible graph for ``expanded`` groups and describe every box and edge.

    With ``show_weights`` weight tensors get boxes of their own; without (the default, as
    Netron draws) each leaf node lists the weights it reads as rows of its box (a weight read
    by several nodes in each of them), and constant-making nodes that read only weights are
    folded too. ``order_hint`` maps item keys (node or tensor ids) to their previous x so that
    a relayout keeps the picture; ``categories`` gives an op type's category (for colours)
    and ``details`` a node's key-attribute text (``3x3 /2``). ``progress(done, total)`` is
    called as the groups are laid out and may raise to stop (``nested_layout``). With the
    ``previous`` drawing of the same graph state, only the groups whose layout problems changed
    are laid out again (an expand or collapse: that group, its ancestors, and the groups its
    crossing edges reach); the hint then steers those alone, and without ``order_hint`` the
    previous drawing's places are the hint (``order_hint={}``: no hint). A narrow level taller
    than ``wrap_height`` (by default the previous drawing's) is wrapped into columns no taller
    than it: the first view sets it so that a frame wraps within the room its parent leaves
    it. Without one, narrow levels taller than ``wrap.MIN_HEIGHT`` wrap to a pleasing shape.
    """
    if wrap_height is None and previous is not None:
        wrap_height = previous.wrap_height
    kinds = ("input", "output", "weight") if show_weights else ("input", "output")
    opened = set(expanded)
    vis = visible_graph(graph, expanded, tensor_kinds=kinds)
    h = Hierarchy.of(graph)
    closed = h.is_group.copy()  # groups drawn closed; an open If or Loop lists its weights
    where = graph.index.node_positions()
    open_at = [p for p in map(where.get, opened) if p is not None]
    closed[np.asarray(open_at, dtype=np.int64)] = False
    folded = np.zeros(len(graph.tensors), dtype=bool)
    vis = place_body_inputs(graph, vis)
    if not show_weights:
        vis, folded = fold_constants(graph, vis, h.is_group)
    vis = feed_body_inputs(graph, vis)  # after folding: a folded value comes from the box
    nn, nt = len(vis.node_items), len(vis.tensor_items)
    n = nn + nt
    boxes = BoxTexts.of(graph, categories, details, show_weights, folded)
    entries = boxes.nodes(vis.node_items, closed) + boxes.tensors(vis.tensor_items)
    title = [e[0] for e in entries]
    detail = [e[1] for e in entries]
    cat = [e[2] for e in entries]
    rows = [e[3] for e in entries]
    w = np.fromiter((e[4] for e in entries), dtype=np.float64, count=n)
    hh = np.fromiter((e[5] for e in entries), dtype=np.float64, count=n)
    kind = np.full(n, KIND_TENSOR, dtype=np.int64)
    kind[:nn] = np.where(closed[vis.node_items], KIND_GROUP, KIND_NODE)
    keys = [graph.nodes[i].id for i in vis.node_items.tolist()]
    keys += [graph.tensors[t].id for t in vis.tensor_items.tolist()]
    hint = None
    if order_hint is not None:
        hint = np.array([order_hint.get(k, np.nan) for k in keys], dtype=np.float64)
    elif previous is not None:
        hint = _previous_places(graph, previous, vis, keys, direction)
    if hint is not None and np.isnan(hint).all():
        hint = None
    frames = vis.frames.tolist()
    slot = {g: k for k, g in enumerate(frames)}
    member = np.array([slot.get(int(f), -1) for f in vis.frame_of_item.tolist()], dtype=np.int64)
    parent = np.array([slot.get(int(h.parent[g]), -1) for g in frames], dtype=np.int64)
    owner = np.maximum(vis.item_of_node[vis.frames], -1).astype(np.int64)
    frame_titles = boxes.frame_titles(frames)
    member, parent, owner, frames, frame_titles = branch_frames(
        graph, vis, member, parent, owner, frames, frame_titles
    )
    title_w = np.array([len(t) * CHAR_W * 0.85 + 24.0 for t in frame_titles])
    nest = _nest_keys(graph, vis, frames)
    state = None
    if previous is not None and previous.layout_of is graph.index and nest is not None:
        state = previous.layout_state
    res = nested_layout(
        n,
        vis.edge_src,
        vis.edge_dst,
        w,
        hh,
        member=member,
        parent=parent,
        owner=owner,
        title_width=title_w,
        direction=direction,
        order_hint=hint,
        wrap=(WRAP_ASPECT, WRAP_TARGET)
        if wrap_height is None
        else (WRAP_ASPECT, WRAP_TARGET, wrap_height),
        # across, the gap between layers carries the shape labels on one line
        rank_sep=LR_RANK_SEP if direction == "LR" else 48.0,
        progress=progress,
        keys=nest,
        previous=state if isinstance(state, NestedState) else None,
    )
    labels = boxes.edge_labels(vis.edge_tensor)
    d = Drawing(
        x=res.x,
        y=res.y,
        w=w,
        h=hh,
        kind=kind,
        title=title,
        detail=detail,
        category=cat,
        item_node=np.concatenate([vis.node_items, np.full(nt, -1)]),
        item_tensor=np.concatenate([np.full(nn, -1), vis.tensor_items]),
        edges=res.points,
        edge_src=vis.edge_src,
        edge_dst=vis.edge_dst,
        edge_tensor=vis.edge_tensor,
        edge_label=labels,
        width=res.width,
        height=res.height,
    )
    depth = _frame_depths(parent)
    order = sorted(range(len(frames)), key=lambda k: int(depth[k]))  # outermost painted first
    d.frames = [(frames[k], res.outlines[k]) for k in order]
    d.frame_titles = [frame_titles[k] for k in order]
    d.frame_depth = depth[np.asarray(order, dtype=np.int64)]
    if direction == "TB":  # after the frames: an input never moves onto one
        inputs_above_readers(d)
    d.edge_box = _boxes_of(res.points)
    d.keys = keys
    d.rows = rows
    d.weights_as_nodes = show_weights
    d.wrap_height = wrap_height
    if nest is not None:
        d.layout_state = getattr(res, "state", None)
        d.layout_of = graph.index
    return d


_BODIES = 3  # bodies of one If/Loop/Scan told apart by frame keys (If has two)


def _nest_keys(graph: Graph, vis: VisibleGraph, frames: list[int]) -> NestKeys | None:
    """Stable names for the layout: a node item by its node position, a tensor item after
    the nodes, a frame by its group's position (a body's frame by its group's and its turn)."""
    nodes = len(graph.nodes)
    item = np.concatenate([vis.node_items, nodes + vis.tensor_items]).astype(np.int64)
    frame = np.asarray(frames, dtype=np.int64)
    seen: dict[int, int] = {}
    base = len(vis.frames)
    for k in range(base, len(frames)):  # the bodies _branches added, after the groups
        turn = seen[frames[k]] = seen.get(frames[k], 0) + 1
        if turn > _BODIES:
            return None
        frame[k] += nodes * turn
    return NestKeys(item, frame, nodes + len(graph.tensors), nodes * (_BODIES + 1))


def _previous_places(
    graph: Graph, previous: Drawing, vis: VisibleGraph, keys: list[str], direction: str
) -> np.ndarray:
    """Where each item stood across the previous drawing (NaN for new ones): by position
    when it drew this graph state, else by id (ids survive edits that renumber nodes)."""
    along = previous.x if direction == "TB" else previous.y
    if previous.layout_of is graph.index:
        nodes = len(graph.nodes)
        at = np.full(nodes + len(graph.tensors), np.nan)
        was = np.where(previous.item_node >= 0, previous.item_node, nodes + previous.item_tensor)
        at[was] = along
        return at[np.concatenate([vis.node_items, nodes + vis.tensor_items])]
    place = dict(zip(previous.keys, along.tolist(), strict=True))
    return np.array([place.get(k, np.nan) for k in keys], dtype=np.float64)


def edge_points(d: Drawing) -> int:
    """How many points the drawing's edges have, without a pass over them in Python."""
    pts = getattr(d.edges, "points", None)
    return len(pts) if isinstance(pts, np.ndarray) else sum(map(len, d.edges))


def _boxes_of(lines: Sequence[np.ndarray]) -> np.ndarray:
    """(x0, y0, x1, y1) of each polyline, in one pass over all their points."""
    return Polylines.of(lines).boxes() if len(lines) else np.zeros((0, 4))


def _frame_depths(parent: np.ndarray) -> np.ndarray:
    """How many frames hold each frame (parents form a forest)."""
    depth = np.zeros(len(parent), dtype=np.int64)
    at = parent.astype(np.int64, copy=True)
    while (live := at >= 0).any():
        depth[live] += 1
        at[live] = parent[at[live]]
    return depth
