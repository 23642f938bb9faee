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
from xocview.model.analyses.opdoc import node_doc, roles
from xocview.model.analyses.summary import shape_text
from xocview.model.boxes import CONSTANT_OPS, folded_constants

__all__ = [
    "BADGE",
    "CONSTANT_OPS",
    "LABEL_CHARS",
    "Drawing",
    "build_drawing",
    "edge_points",
    "elide",
    "weight_rows",
]

CHAR_W = 8.6  # a bold title character at the base font size (ONNX op names: mean 8.5)
NODE_H = 34.0
NODE_H_DETAIL = 46.0
TENSOR_H = 24.0
TENSOR_H_DETAIL = 34.0
MIN_W = 72.0
ROW_H = 15.0  # one folded weight's row (role and shape) below a node's title and detail
ROW_CHAR_W = 6.4  # average width of a row character (the detail font)
PAD = 20.0
BADGE = 16.0  # the margin a closed group's "+" badge takes, on each side to keep titles centred
FRAME_TITLE = 16.0
# Labels longer than this are cut with an ellipsis before boxes are sized: a file may name a
# node with a million characters, and its box must still be a box (the Inspector shows more).
LABEL_CHARS = 48
ELLIPSIS = "\u2026"

KIND_NODE, KIND_GROUP, KIND_TENSOR = 0, 1, 2
# A drawing taller than this many times its width is wrapped into columns, brought near
# WRAP_TARGET (height / width) so that a long chain fills a window instead of a strip.
WRAP_ASPECT = 2.5
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
    previous drawing's places are the hint (``order_hint={}``: no hint).
    """
    kinds = ("input", "output", "weight") if show_weights else ("input", "output")
    opened = set(expanded)
    vis = visible_graph(graph, expanded, tensor_kinds=kinds)
    h = Hierarchy.of(graph)
    closed = h.is_group.copy()  # groups drawn closed; an open If or Loop lists its weights
    where = graph.index.node_positions()
    open_at = [p for p in map(where.get, opened) if p is not None]
    closed[np.asarray(open_at, dtype=np.int64)] = False
    folded = np.zeros(len(graph.tensors), dtype=bool)
    vis = _place_body_inputs(graph, vis)
    if not show_weights:
        vis, folded = _fold_constants(graph, vis, h.is_group)
    nn, nt = len(vis.node_items), len(vis.tensor_items)
    n = nn + nt
    boxes = _BoxTexts.of(graph, categories, details, show_weights, folded)
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
    member, parent, owner, frames, frame_titles = _branches(
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
        wrap=(WRAP_ASPECT, WRAP_TARGET),
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
    d.edge_box = _boxes_of(res.points)
    d.keys = keys
    d.rows = rows
    d.weights_as_nodes = show_weights
    if nest is not None:
        d.layout_state = getattr(res, "state", None)
        d.layout_of = graph.index
    depth = _frame_depths(parent)
    order = sorted(range(len(frames)), key=lambda k: int(depth[k]))  # outermost painted first
    d.frames = [(frames[k], res.outlines[k]) for k in order]
    d.frame_titles = [frame_titles[k] for k in order]
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


def _branches(
    graph: Graph,
    vis: VisibleGraph,
    member: np.ndarray,
    parent: np.ndarray,
    owner: np.ndarray,
    frames: list[int],
    titles: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int], list[str]]:
    """An open If, Loop or Scan gets a frame per body (``then_branch``, ``else_branch``,
    ``body``) inside its own, so that the branches are told apart."""
    member = member.copy()
    parents: list[int] = parent.tolist()
    owners: list[int] = owner.tolist()
    frames, titles = list(frames), list(titles)
    nn = len(vis.node_items)
    node_of_item = np.concatenate([vis.node_items, np.full(len(vis.tensor_items), -1)])
    for slot in range(len(frames)):
        if owners[slot] < 0:
            continue
        mine = np.flatnonzero(member == slot)
        bodies: dict[str, list[int]] = {}
        for k in mine.tolist():
            i = int(node_of_item[k]) if k < nn else _first_consumer(vis, k)
            body = graph.nodes[i].metadata.get("subgraph") if i >= 0 else None
            bodies.setdefault(str(body) if body else "", []).append(k)
        for c in range(len(frames)):
            if parents[c] == slot:
                body = graph.nodes[frames[c]].metadata.get("subgraph")
                bodies.setdefault(str(body) if body else "", []).append(-1 - c)
        named = [b for b in bodies if b]
        if not named:
            continue
        if len(named) == 1 and "" in bodies:  # a Loop's unused iteration count: its one body
            bodies[named[0]] += bodies.pop("")
        for body in sorted(named):
            new = len(frames)
            frames.append(frames[slot])
            titles.append(body)
            parents.append(slot)
            owners.append(-1)
            for k in bodies[body]:
                if k >= 0:
                    member[k] = new
                else:
                    parents[-1 - k] = new
    return (
        member,
        np.asarray(parents, dtype=np.int64),
        np.asarray(owners, dtype=np.int64),
        frames,
        titles,
    )


def _first_consumer(vis: VisibleGraph, item: int) -> int:
    """The node position of the first node item that ``item`` feeds, or -1."""
    out = vis.edge_dst[vis.edge_src == item]
    out = out[out < len(vis.node_items)]
    return int(vis.node_items[out[0]]) if len(out) else -1


def _place_body_inputs(graph: Graph, vis: VisibleGraph) -> VisibleGraph:
    """A body's own inputs (a Loop's iteration count, a Scan's slices) are not the graph's:
    drawn inside the open node's frame, and not at all while it is closed."""
    index = graph.index
    nn = len(vis.node_items)
    frames = set(vis.frames.tolist())
    frame_of = vis.frame_of_item.copy()
    drop = np.zeros(vis.num_items, dtype=bool)
    for k, t in enumerate(vis.tensor_items.tolist()):
        owner_id = graph.tensors[t].metadata.get("subgraph_of")
        if not isinstance(owner_id, str) or not index.has_node(owner_id):
            continue
        g = index.node_position(owner_id)
        if g in frames:
            frame_of[nn + k] = g
        else:
            drop[nn + k] = True
    vis = VisibleGraph(
        node_items=vis.node_items,
        tensor_items=vis.tensor_items,
        edge_src=vis.edge_src,
        edge_dst=vis.edge_dst,
        edge_tensor=vis.edge_tensor,
        item_of_node=vis.item_of_node,
        frame_of_item=frame_of,
        frames=vis.frames,
    )
    return _drop_items(vis, drop) if drop.any() else vis


def _fold_constants(
    graph: Graph, vis: VisibleGraph, is_group: np.ndarray
) -> tuple[VisibleGraph, np.ndarray]:
    """``vis`` without the boxes of constant-making nodes that read only weights, and which
    tensors are folded (weights, and what those nodes make); their edges go with them."""
    found = graph.index.derived.get("drawing.folded")  # one answer per graph state
    if not isinstance(found, tuple):
        found = graph.index.derived["drawing.folded"] = folded_constants(graph, is_group)
    node_folded, folded = found
    drop = np.zeros(vis.num_items, dtype=bool)
    drop[: len(vis.node_items)] = node_folded[vis.node_items]
    if not drop.any():
        return vis, folded
    return _drop_items(vis, drop), folded


def _drop_items(vis: VisibleGraph, drop: np.ndarray) -> VisibleGraph:
    """``vis`` without the ``drop`` items and their edges."""
    nn = len(vis.node_items)
    keep = np.flatnonzero(~drop)
    new = np.full(vis.num_items, -1, dtype=np.int64)
    new[keep] = np.arange(len(keep))
    ok = ~drop[vis.edge_src] & ~drop[vis.edge_dst]
    return VisibleGraph(
        node_items=vis.node_items[~drop[:nn]],
        tensor_items=vis.tensor_items[~drop[nn:]],
        edge_src=new[vis.edge_src[ok]],
        edge_dst=new[vis.edge_dst[ok]],
        edge_tensor=vis.edge_tensor[ok],
        item_of_node=np.where(vis.item_of_node >= 0, new[np.maximum(vis.item_of_node, 0)], -1),
        frame_of_item=vis.frame_of_item[keep],
        frames=vis.frames,
    )


_Box = tuple[str, str, str, tuple[str, ...], float, float]  # title, detail, category, rows, w, h


class _BoxTexts:
    """Each box's texts and size, made once per graph state and kept with its index: an
    expand or collapse draws mostly the boxes it drew before."""

    def __init__(
        self,
        graph: Graph,
        categories: Callable[[str], str],
        details: Callable[[Node], str],
        show_weights: bool,
        folded: np.ndarray,
    ) -> None:
        self.graph = graph
        self.categories = categories
        self.details = details
        self.show_weights = show_weights
        self.folded = folded
        self.hierarchy = Hierarchy.of(graph)
        self._open: dict[int, _Box] = {}
        self._closed: dict[int, _Box] = {}
        self._tensors: dict[int, _Box] = {}
        self._labels: dict[int, str] = {}
        self._titles: dict[int, str] = {}

    @staticmethod
    def of(
        graph: Graph,
        categories: Callable[[str], str],
        details: Callable[[Node], str],
        show_weights: bool,
        folded: np.ndarray,
    ) -> _BoxTexts:
        key = f"drawing.boxes:{id(categories)}:{id(details)}:{show_weights}"
        found = graph.index.derived.get(key)
        if not isinstance(found, _BoxTexts) or found.categories is not categories:
            found = _BoxTexts(graph, categories, details, show_weights, folded)
            graph.index.derived[key] = found
        return found

    def nodes(self, items: np.ndarray, closed: np.ndarray) -> list[_Box]:
        out = []
        opened, shut = self._open, self._closed
        for i in items.tolist():
            table = shut if closed[i] else opened
            e = table.get(i)
            if e is None:
                e = table[i] = self._node(i, bool(closed[i]))
            out.append(e)
        return out

    def tensors(self, items: np.ndarray) -> list[_Box]:
        out = []
        table = self._tensors
        for t in items.tolist():
            e = table.get(t)
            if e is None:
                ten = self.graph.tensors[t]
                title, detail = elide(ten.id), elide(shape_text(ten))
                e = table[t] = (title, detail, ten.kind, (), *_size(title, detail, (), KIND_TENSOR))
            out.append(e)
        return out

    def frame_titles(self, frames: list[int]) -> list[str]:
        table = self._titles
        out = []
        for g in frames:
            text = table.get(g)
            if text is None:
                text = table[g] = _frame_title(self.graph, g)
            out.append(text)
        return out

    def edge_labels(self, tensors: np.ndarray) -> list[str]:
        out = []
        table = self._labels
        for t in tensors.tolist():
            text = table.get(t)
            if text is None:
                text = table[t] = elide(shape_text(self.graph.tensors[t]))
            out.append(text)
        return out

    def _node(self, i: int, closed: bool) -> _Box:
        node = self.graph.nodes[i]
        h = self.hierarchy
        rows: tuple[str, ...] = ()
        if closed:  # a group drawn as one box; an open If or Loop heads its frame instead
            title = elide(str(node.metadata.get("name") or node.op_type))
            detail = f"{int(h.child_count[i])} inside"
            cat, kind = "group", KIND_GROUP
        else:
            title, detail = elide(node.op_type), elide(self.details(node))
            cat, kind = self.categories(node.op_type), KIND_NODE
            if not self.show_weights:  # an open If or Loop lists its weights too
                rows = _rows_of(self.graph, i, self.folded)
        return (title, detail, cat, rows, *_size(title, detail, rows, kind))


def _size(title: str, detail: str, rows: tuple[str, ...], kind: int) -> tuple[float, float]:
    """A box's width and height for its texts (a closed group's "+" badge beside its title)."""
    length = max(len(title), len(detail) * 0.85)
    row_chars = max(map(len, rows), default=0)
    w = max(MIN_W, max(length * CHAR_W, row_chars * ROW_CHAR_W) + PAD)
    if kind == KIND_GROUP:
        w += 2 * BADGE
    if kind == KIND_TENSOR:
        h = TENSOR_H_DETAIL if detail else TENSOR_H
    else:
        h = NODE_H_DETAIL if detail else NODE_H
    if rows:
        h += len(rows) * ROW_H + 4.0
    return w, h


def _rows_of(graph: Graph, i: int, folded: np.ndarray) -> tuple[str, ...]:
    """Node i's ``role shape`` text per folded tensor it reads (see ``weight_rows``)."""
    node = graph.nodes[i]
    weights = [k for k, t in enumerate(node.inputs) if folded[t]]
    if not weights:
        return ()
    schema = node_doc(graph, i)
    names = [""] * len(node.inputs)
    if schema is not None:
        names = roles(schema.inputs, len(node.inputs), node.metadata.get("omitted_inputs"))
    tensors = graph.tensors
    return tuple(
        elide(f"{names[k] or f'in{k}'} {shape_text(tensors[node.inputs[k]])}") for k in weights
    )


def weight_rows(
    graph: Graph, node_items: np.ndarray, is_group: np.ndarray, folded: np.ndarray
) -> list[tuple[str, ...]]:
    """For each item node, one ``role shape`` text per folded tensor it reads (``folded``:
    per tensor; weights and made constants), in input order.

    The role is the input's formal name in the operator's ONNX schema (``W``, ``B``), else its
    input position (``in2``); a collapsed group lists none, so that a group never draws its
    weights one by one.
    """
    return [() if is_group[i] else _rows_of(graph, i, folded) for i in node_items.tolist()]


def elide(text: str, limit: int = LABEL_CHARS) -> str:
    """``text`` cut to ``limit`` characters, the last of them an ellipsis when it was longer.

    Line breaks become spaces, since a label is one line.
    """
    if len(text) > limit:
        text = text[: limit - 1] + ELLIPSIS
    return text.replace("\n", " ").replace("\r", " ") if "\n" in text or "\r" in text else text


def _frame_title(graph: Graph, g: int) -> str:
    node = graph.nodes[g]
    name = str(node.metadata.get("name") or node.id)
    if node.op_type in ("Scope", "Section", name):
        return elide(name)
    return f"{elide(name)}  ({elide(node.op_type, LABEL_CHARS // 2)})"
