"""Groups and the visible graph: which boxes show for a given set of expanded groups.

A node whose metadata has ``children_ids`` is a group and its children name it in
``parent_id``. Files in the wild do not always keep both sides in step, so a node's parent is
its ``parent_id`` when that names another node, else the first group listing it in
``children_ids``; ``validate`` reports every mismatch. Nodes on a hierarchy cycle are treated
as top-level here; nodes below a cycle keep their parents.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xocview.model.graph import Graph

__all__ = ["MAX_GROUP_DEPTH", "Hierarchy", "VisibleGraph", "visible_graph"]

_I = np.int64
# Groups nest at most this deep (a PyTorch export nests a dozen levels). Deeper levels are
# shown flattened into their ancestor at this depth: each level of frames costs layout and
# painting, and a file of a few hundred kilobytes could otherwise ask for thousands.
MAX_GROUP_DEPTH = 64


class Hierarchy:
    """Parent, children and depth of every node (arrays indexed by node position).

    Groups nested deeper than ``MAX_GROUP_DEPTH`` are flattened: a node below that depth has
    its ancestor at depth ``MAX_GROUP_DEPTH - 1`` for its parent (``flattened`` marks it), so
    that nothing downstream (layout, drawing, the first view) meets more levels than that.
    ``nesting`` is the depth the file asked for (``max_depth`` when nothing was flattened).
    """

    def __init__(self, graph: Graph) -> None:
        n = len(graph.nodes)
        where = graph.index.node_positions()  # one dict lookup per id (130k nodes: 0.3 s less)
        parent = np.full(n, -1, dtype=_I)
        # Claims as (group, child) pairs in file order; the first claim of a child wins, and a
        # child's own parent_id overrides every claim. Gathered in lists, set with numpy.
        claims_g: list[int] = []
        claims_k: list[int] = []
        for g, node in enumerate(graph.nodes):
            kids = node.metadata.get("children_ids")
            if not isinstance(kids, list):
                continue
            for kid in kids:
                k = where.get(kid) if isinstance(kid, str) else None
                if k is not None:
                    claims_g.append(g)
                    claims_k.append(k)
        if claims_k:
            cg, ck = np.array(claims_g, dtype=_I), np.array(claims_k, dtype=_I)
            cg, ck = cg[cg != ck], ck[cg != ck]
            kids_claimed, first = np.unique(ck, return_index=True)
            parent[kids_claimed] = cg[first]
        named_i: list[int] = []
        named_p: list[int] = []
        for i, node in enumerate(graph.nodes):
            pid = node.metadata.get("parent_id")
            p = where.get(pid) if isinstance(pid, str) else None
            if p is not None and p != i:
                named_i.append(i)
                named_p.append(p)
        parent[named_i] = named_p
        depth, top = _depths(parent)
        self.in_cycle = _on_cycles(parent, depth < 0)
        if self.in_cycle.any():  # cut the cycles; what hangs below them keeps its parent
            parent[self.in_cycle] = -1
            depth, top = _depths(parent)
        depth[depth < 0] = 0
        self.nesting = int(depth.max(initial=0))
        self.flattened = depth > MAX_GROUP_DEPTH
        self.first_flattened = -1  # the first of the shallowest flattened nodes
        if self.nesting > MAX_GROUP_DEPTH:
            self.first_flattened = int(np.argmax(depth == MAX_GROUP_DEPTH + 1))
            parent[self.flattened] = parent[top[self.flattened]]
            np.minimum(depth, MAX_GROUP_DEPTH, out=depth)
        self.parent, self.depth = parent, depth
        self.child_count = np.bincount(parent[parent >= 0], minlength=n).astype(_I)
        self.is_group = self.child_count > 0

    @classmethod
    def of(cls, graph: Graph) -> Hierarchy:
        """The hierarchy of ``graph`` as it is now, made once per graph state (kept with its
        index, which an edit throws away); its arrays are shared: read them, never write."""
        derived = graph.index.derived
        found = derived.get("hierarchy")
        if not isinstance(found, Hierarchy):
            found = derived["hierarchy"] = cls(graph)
        return found

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if len(self.depth) else 0

    def children(self, group: int) -> np.ndarray:
        return np.flatnonzero(self.parent == group)

    def ancestors(self, node: int) -> list[int]:
        out, p = [], int(self.parent[node])
        while p >= 0:
            out.append(p)
            p = int(self.parent[p])
        return out


def _depths(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Depth of every node (-1 for the nodes no root reaches: on or below a cycle) and, for
    each node deeper than ``MAX_GROUP_DEPTH``, its ancestor at that depth (else -1).

    Down to ``MAX_GROUP_DEPTH`` a level is found from the one above through the children's
    ranges (nodes sorted by parent); below it each node jumps up 1, 2, 4, ... levels at a time
    to the first node of known depth. The work is O(n log n) however deep the nodes nest.
    """
    n = len(parent)
    depth = np.full(n, -1, dtype=_I)
    kids = np.flatnonzero(parent >= 0)
    by_parent = kids[np.argsort(parent[kids], kind="stable")]
    ptr = np.searchsorted(parent[by_parent], np.arange(n + 1, dtype=_I))
    frontier = np.flatnonzero(parent < 0)
    level = 0
    while frontier.size and level <= MAX_GROUP_DEPTH:
        depth[frontier] = level
        level += 1
        first, count = ptr[frontier], ptr[frontier + 1] - ptr[frontier]
        # The children of every frontier node: its range of ``by_parent``, end to end.
        shift = np.repeat(first - (np.cumsum(count) - count), count)
        frontier = by_parent[shift + np.arange(int(count.sum()), dtype=_I)]
    top = np.full(n, -1, dtype=_I)
    rest = np.flatnonzero(depth < 0)  # deeper, or on or below a cycle
    if frontier.size and rest.size:
        known = depth >= 0
        up = np.where(known, np.arange(n, dtype=_I), parent)  # a known node stays where it is
        hops = (~known).astype(_I)
        steps = 1
        while steps <= rest.size:
            at = up[rest]
            if known[at].all():
                break
            hops[rest] += hops[at]
            up[rest] = up[at]
            steps *= 2
        reached = rest[known[up[rest]]]  # the first known node above is at MAX_GROUP_DEPTH
        top[reached] = up[reached]
        depth[reached] = MAX_GROUP_DEPTH + hops[reached]
    return depth, top


def _on_cycles(parent: np.ndarray, unreached: np.ndarray) -> np.ndarray:
    """The unreached nodes that lie on a parent cycle, not merely below one.

    An unreached node's parent is unreached too, so going up from one long enough always ends
    on a cycle, and going up the same number of steps from every node of a cycle lands on every
    node of it. Jumps of 1, 2, 4, ... steps (each round doubles them) get there in log rounds.
    """
    on = np.zeros(len(parent), dtype=bool)
    at = np.flatnonzero(unreached)
    jump = parent.copy()
    steps = 1
    while steps < at.size:
        jump[at] = jump[jump[at]]
        steps *= 2
    on[jump[at]] = True
    return on


@dataclass(frozen=True)
class VisibleGraph:
    """What to draw: items (visible nodes, then tensor nodes) and the edges between them.

    ``item_of_node[i]`` is the item standing for node i (itself, or the collapsed group that
    hides it; -1 for an expanded group, which is drawn as a frame). ``frame_of_item[k]`` is the
    innermost expanded group around item k (a node position, -1 at top level).
    """

    node_items: np.ndarray
    tensor_items: np.ndarray
    edge_src: np.ndarray
    edge_dst: np.ndarray
    edge_tensor: np.ndarray
    item_of_node: np.ndarray
    frame_of_item: np.ndarray
    frames: np.ndarray

    @property
    def num_items(self) -> int:
        return len(self.node_items) + len(self.tensor_items)


def visible_graph(
    graph: Graph,
    expanded: Collection[str] = (),
    *,
    tensor_kinds: Collection[str] = ("input", "output", "weight"),
) -> VisibleGraph:
    """The graph as drawn with the groups named in ``expanded`` open and all others closed.

    Each visible node is a leaf or a collapsed group whose ancestors are all expanded; each edge
    is a tensor whose producer and consumer map to different items. Tensors of ``tensor_kinds``
    get items of their own (inputs, outputs, and weights unless folded into their consumers).
    """
    h = Hierarchy.of(graph)
    index = graph.index
    n = len(graph.nodes)
    is_exp = np.zeros(n, dtype=bool)
    for gid in expanded:
        if index.has_node(gid):
            is_exp[index.node_position(gid)] = True
    is_exp &= h.is_group

    rep, hidden, frame = _representatives(h, is_exp)
    # A group with inputs and outputs of its own (If, Loop, Scan) is an operator as well as a
    # container: it keeps its box when expanded, with its bodies drawn in its frame.
    has_io = np.diff(index.node_in_ptr) + np.diff(index.node_out_ptr) > 0
    framed = h.is_group & is_exp & ~has_io
    visible = ~hidden & ~framed
    node_items = np.flatnonzero(visible)
    item_of_node = np.full(n, -1, dtype=_I)
    item_of_node[node_items] = np.arange(len(node_items), dtype=_I)
    item_of_node = np.where(rep >= 0, item_of_node[np.maximum(rep, 0)], -1)
    item_of_node[framed & ~hidden] = -1

    # Edges come from nodes' own inputs and outputs; groups made only to gather nodes (scopes,
    # function calls) have none, so their boundary edges are their members' edges.
    es, ed, et = index.edge_src, index.edge_dst, index.edge_tensor
    srcs, dsts, tens = [item_of_node[es]], [item_of_node[ed]], [et]

    kinds = set(tensor_kinds)
    tensor_items = np.asarray(
        [t for t, ten in enumerate(graph.tensors) if ten.kind in kinds], dtype=_I
    )
    owners = _owners(graph, tensor_items)
    tensor_items = _without_enclosed(tensor_items, owners, hidden, is_exp)
    base = len(node_items)
    item_of_tensor = np.full(len(graph.tensors), -1, dtype=_I)
    item_of_tensor[tensor_items] = base + np.arange(len(tensor_items), dtype=_I)
    producer = index.producer
    # A tensor item with no producer feeds its consumers; one with a producer hangs off it
    # (its consumers keep their direct edge from the producer).
    cons_t = np.repeat(np.arange(len(graph.tensors), dtype=_I), np.diff(index.consumer_ptr))
    cons_n = index.consumers
    sel = (item_of_tensor[cons_t] >= 0) & (producer[cons_t] < 0)
    srcs.append(item_of_tensor[cons_t[sel]])
    dsts.append(item_of_node[cons_n[sel]])
    tens.append(cons_t[sel])
    p = producer[tensor_items]
    sel = p >= 0
    srcs.append(item_of_node[p[sel]])
    dsts.append(item_of_tensor[tensor_items[sel]])
    tens.append(tensor_items[sel])

    src, dst, ten = np.concatenate(srcs), np.concatenate(dsts), np.concatenate(tens)
    ok = (src != dst) & (src >= 0) & (dst >= 0)
    triples = np.unique(np.stack([src[ok], dst[ok], ten[ok]]), axis=1)

    frame_of_item = np.concatenate(
        [frame[node_items], _tensor_frames(graph, tensor_items, frame, owners)]
    )
    return VisibleGraph(
        node_items=node_items,
        tensor_items=tensor_items,
        edge_src=triples[0],
        edge_dst=triples[1],
        edge_tensor=triples[2],
        item_of_node=item_of_node,
        frame_of_item=frame_of_item,
        frames=np.flatnonzero(h.is_group & is_exp & ~hidden),
    )


def _representatives(h: Hierarchy, is_exp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per node: the visible node standing for it, whether it is hidden, its innermost frame."""
    n = len(h.parent)
    rep = np.arange(n, dtype=_I)
    hidden = np.zeros(n, dtype=bool)
    frame = np.full(n, -1, dtype=_I)
    for level in range(1, h.max_depth + 1):
        at = np.flatnonzero(h.depth == level)
        p = h.parent[at]
        p_hidden = hidden[p]
        p_open = is_exp[p]
        hidden[at] = p_hidden | ~p_open
        rep[at] = np.where(p_hidden, rep[p], np.where(p_open, at, p))
        frame[at] = np.where(p_open & ~p_hidden, p, frame[p])
    return rep, hidden, frame


def _ends(graph: Graph, t: int) -> np.ndarray:
    """The nodes a graph input or output tensor is drawn beside: its producer, else its
    consumers."""
    index = graph.index
    p = int(index.producer[t])
    if p >= 0:
        return np.asarray([p], dtype=_I)
    return index.consumers[index.consumer_ptr[t] : index.consumer_ptr[t + 1]]


def _owner(graph: Graph, t: int) -> int:
    """The group an input or output belongs to (its ``parent_id``, as an LLM layer owns its
    KV cache) when every node it is drawn beside is inside that group; else -1."""
    gid = graph.tensors[t].metadata.get("parent_id")
    index = graph.index
    if not isinstance(gid, str) or not index.has_node(gid):
        return -1
    g = index.node_position(gid)
    h = Hierarchy.of(graph)
    for n in _ends(graph, t).tolist():
        while n >= 0 and n != g:
            n = int(h.parent[n])
        if n != g:
            return -1
    return g


def _owners(graph: Graph, tensor_items: np.ndarray) -> dict[int, int]:
    """The owning group (``_owner``) of each tensor item that names one: most graphs have
    none, and the few that do (an LLM's KV cache) are looked at once per view."""
    tensors = graph.tensors
    return {
        t: _owner(graph, t) for t in tensor_items.tolist() if "parent_id" in tensors[t].metadata
    }


def _without_enclosed(
    tensor_items: np.ndarray, owners: dict[int, int], hidden: np.ndarray, is_exp: np.ndarray
) -> np.ndarray:
    """Drop the inputs and outputs owned by a group that is hidden or closed: its box stands
    for them, as it does for its weights."""
    if not owners:
        return tensor_items
    keep = np.ones(len(tensor_items), dtype=bool)
    for k, t in enumerate(tensor_items.tolist()):
        g = owners.get(t, -1)
        keep[k] = g < 0 or bool(is_exp[g] and not hidden[g])
    return tensor_items[keep]


def _tensor_frames(
    graph: Graph, tensor_items: np.ndarray, frame: np.ndarray, owners: dict[int, int]
) -> np.ndarray:
    """A weight sits in the frame of its first consumer; an input or output in its owner's
    frame, else at top level."""
    index = graph.index
    is_weight = np.fromiter(
        (graph.tensors[t].kind == "weight" for t in tensor_items.tolist()),
        dtype=bool,
        count=len(tensor_items),
    )
    start = index.consumer_ptr[tensor_items]
    has = is_weight & (index.consumer_ptr[tensor_items + 1] > start)
    out = np.full(len(tensor_items), -1, dtype=_I)
    out[has] = frame[index.consumers[start[has]]]
    for k in np.flatnonzero(~is_weight).tolist():
        out[k] = owners.get(int(tensor_items[k]), -1)
    return out
