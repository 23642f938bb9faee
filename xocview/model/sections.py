"""Ordered "part i of k" groups for levels with too many boxes to draw at once.

A flat CNN export (densenet121: 910 boxes, no scopes) has nothing to close, so its first view
would draw all of it. As Model Explorer does, a level whose direct children make more than
``LEVEL_LIMIT`` boxes is cut into consecutive parts of its topological order, each cut where
the fewest tensors are live, so that a part reads as a stage of the network. The parts are
groups like the scope groups of ``scopes.py``, marked ``derived: "section"``.
"""

from __future__ import annotations

import heapq
from itertools import pairwise
from math import ceil

import numpy as np

from xocview.model.boxes import box_weights
from xocview.model.graph import Graph, Node
from xocview.model.hierarchy import Hierarchy

__all__ = [
    "DRAWN_ONLY",
    "FANOUT",
    "LEVEL_LIMIT",
    "SECTION_BOXES",
    "add_section_groups",
    "without_sections",
]

LEVEL_LIMIT = 400  # a level of more boxes than this is split
SECTION_BOXES = 180  # a part holds at most about this many boxes (give or take the window)
FANOUT = 32  # a level needing more parts than this gets parts of parts
WINDOW = 0.15  # a cut moves up to this fraction of a part's size to find a narrow point

_I = np.int64
DRAWN_ONLY = frozenset({"section", "cluster"})  # derived groups no file keeps
_Part = tuple[int, int, list["_Part"]]  # [start, stop) in the level's order, its own parts


def add_section_groups(graph: Graph, limit: int = LEVEL_LIMIT, size: int = SECTION_BOXES) -> int:
    """Split each level (the top one, each group's children) of more than ``limit`` boxes
    (``boxes.box_weights``) into parts of at most about ``size`` boxes; returns how many groups
    were added.

    Children of an operator with bodies (If, Loop) stay as they are: they are branches, not
    stages. A part holds parts only when its level needs more than ``FANOUT`` of them.
    """
    if not 0 < size < limit:
        raise ValueError(f"part size {size} must be positive and below the limit {limit}")
    nodes = graph.nodes
    if len(nodes) <= limit:
        return 0
    h = Hierarchy.of(graph)
    weight = box_weights(graph, h)
    levels = _crowded_levels(graph, h, weight, limit)
    if not levels:
        return 0
    by_depth = _by_depth(h.depth)
    key = _file_keys(h, by_depth)
    taken = {nd.id for nd in nodes}
    groups: list[Node] = []
    kids_depth = [0 if p < 0 else int(h.depth[p]) + 1 for p, _ in levels]
    for depth in sorted(set(kids_depth)):
        here = [lv for lv, d in zip(levels, kids_depth, strict=True) if d == depth]
        edges = _lifted_edges(graph, h, by_depth, depth, here)
        for (p, kids), (src, dst, ten) in zip(here, edges, strict=True):
            order = _topological(key[kids], src, dst)
            pos = np.empty(len(kids), dtype=_I)
            pos[order] = np.arange(len(kids), dtype=_I)
            cross = _live_across(pos[src], pos[dst], ten, len(kids))
            before = np.concatenate([[0.0], np.cumsum(weight[kids[order]], dtype=np.float64)])
            tree = _split(before, cross, 0, len(kids), limit, size)
            made = _Maker(graph, kids[order], weight[kids[order]], taken)
            parent_id = nodes[p].id if p >= 0 else None
            ids = made.parts(tree, parent_id)
            if p >= 0:
                _replace_children(nodes[p], {nodes[k].id for k in kids.tolist()}, ids)
            groups.extend(made.groups)
    nodes.extend(groups)
    graph.invalidate()
    return len(groups)


def _crowded_levels(
    graph: Graph, h: Hierarchy, weight: np.ndarray, limit: int
) -> list[tuple[int, np.ndarray]]:
    """(parent position or -1 for the top, its children ascending) of each level to split.

    A top-level node whose ``parent_id`` names no possible parent (a dangling id, a hierarchy
    cycle) keeps its fault for ``validate`` to report: it is left out; so is a node the
    hierarchy flattened (nested too deep), whose ``parent_id`` names another group than the
    one it is drawn in (a section would give it that one on saving).
    """
    nodes, n = graph.nodes, len(graph.nodes)
    top = h.parent < 0
    free = np.fromiter(("parent_id" not in nd.metadata for nd in nodes), dtype=bool, count=n)
    eligible = (~top | free) & ~h.flattened
    slot = np.where(top, n, h.parent)
    load = np.bincount(slot[eligible], weights=weight[eligible], minlength=n + 1)
    index = graph.index
    has_io = np.diff(index.node_in_ptr) + np.diff(index.node_out_ptr) > 0
    crowded = load > limit
    crowded[:n] &= ~has_io
    members = np.flatnonzero(eligible & crowded[slot])
    if not members.size:
        return []
    slots = slot[members]
    order = np.argsort(slots, kind="stable")
    members, slots = members[order], slots[order]
    starts = np.flatnonzero(np.r_[True, slots[1:] != slots[:-1]])
    out = []
    for a, b in pairwise([*starts.tolist(), len(members)]):
        s = int(slots[a])
        out.append((-1 if s == n else s, members[a:b]))
    return out


def _by_depth(depth: np.ndarray) -> list[np.ndarray]:
    """Node positions at each depth, ascending."""
    order = np.argsort(depth, kind="stable")
    ends = np.searchsorted(depth[order], np.arange(int(depth.max(initial=0)) + 1), side="right")
    return np.split(order, ends[:-1])


def _file_keys(h: Hierarchy, by_depth: list[np.ndarray]) -> np.ndarray:
    """Where each node comes in the file: a leaf's position, a group's first leaf's (groups are
    usually appended after the leaves, so their own positions say nothing)."""
    n = len(h.parent)
    key = np.where(h.is_group, n + np.arange(n, dtype=_I), np.arange(n, dtype=_I))
    for at in reversed(by_depth[1:]):
        np.minimum.at(key, h.parent[at], key[at])
    return key


def _lifted_edges(
    graph: Graph,
    h: Hierarchy,
    by_depth: list[np.ndarray],
    depth: int,
    levels: list[tuple[int, np.ndarray]],
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per level of children at ``depth``: the data edges between its children (local indices
    into its children, and the tensor), each end lifted to the child that holds it."""
    n = len(h.parent)
    anc = np.full(n, -1, dtype=_I)  # the ancestor at ``depth`` (or the node itself)
    anc[by_depth[depth]] = by_depth[depth]
    for at in by_depth[depth + 1 :]:
        anc[at] = anc[h.parent[at]]
    local = np.full(n, -1, dtype=_I)
    level_of = np.full(n, -1, dtype=_I)
    for k, (_, kids) in enumerate(levels):
        local[kids] = np.arange(len(kids), dtype=_I)
        level_of[kids] = k
    index = graph.index
    a, b = anc[index.edge_src], anc[index.edge_dst]
    la = np.where(a >= 0, level_of[np.maximum(a, 0)], -1)
    lb = np.where(b >= 0, level_of[np.maximum(b, 0)], -1)
    ok = (la >= 0) & (la == lb) & (a != b)
    a, b, la, ten = a[ok], b[ok], la[ok], index.edge_tensor[ok]
    order = np.argsort(la, kind="stable")
    a, b, la, ten = a[order], b[order], la[order], ten[order]
    ends = np.searchsorted(la, np.arange(len(levels)), side="right")
    starts = np.r_[0, ends[:-1]]
    return [
        (local[a[s:e]], local[b[s:e]], ten[s:e])
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
    ]


def _topological(keys: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Indices 0..m-1 in a topological order of the edges ``src -> dst`` that follows ``keys``
    (file order), each source that feeds something placed just before its first reader.

    Exporters often write every constant first (densenet121 opens with 836 ConstantOfShape);
    in file order the first part would be nothing but those. Nodes on a cycle come, in key
    order, where the order gets stuck.
    """
    m = len(keys)
    big = np.iinfo(_I).max
    first_reader = np.full(m, big, dtype=_I)
    np.minimum.at(first_reader, src, keys[dst])
    has_pred = np.zeros(m, dtype=bool)
    has_pred[dst] = True
    early = ~has_pred & (first_reader < big)
    prio = np.lexsort((keys, ~early, np.where(early, first_reader, keys)))
    rank = np.empty(m, dtype=_I)
    rank[prio] = np.arange(m, dtype=_I)
    if bool(np.all(rank[src] < rank[dst])):  # the common case: no heap needed
        return prio
    return _kahn(rank, prio, src, dst)


def _kahn(rank: np.ndarray, prio: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Kahn's algorithm on ranks, taking the lowest ready one; when stuck on a cycle, the lowest
    not yet placed is taken as if it were ready."""
    m = len(rank)
    rs, rd = rank[src], rank[dst]
    by_src = np.argsort(rs, kind="stable")
    succ = rd[by_src].tolist()
    ptr = np.zeros(m + 1, dtype=_I)
    np.cumsum(np.bincount(rs, minlength=m), out=ptr[1:])
    ptr_l = ptr.tolist()
    indeg = np.bincount(rd, minlength=m).tolist()
    heap = [r for r in range(m) if indeg[r] == 0]  # ascending, so already a heap
    placed = [False] * m
    out: list[int] = []
    stuck = 0  # no rank below it is unplaced
    pop, push = heapq.heappop, heapq.heappush
    while len(out) < m:
        if not heap:
            while placed[stuck]:
                stuck += 1
            heap.append(stuck)
        r = pop(heap)
        if placed[r]:
            continue
        placed[r] = True
        out.append(r)
        for s in succ[ptr_l[r] : ptr_l[r + 1]]:
            indeg[s] -= 1
            if indeg[s] == 0 and not placed[s]:
                push(heap, s)
    return prio[np.asarray(out, dtype=_I)]


def _live_across(pa: np.ndarray, pb: np.ndarray, ten: np.ndarray, m: int) -> np.ndarray:
    """``cross[c]``: how many tensors made before place c are read at or after it (c in 0..m),
    from edges between places ``pa -> pb`` carrying tensor ``ten``."""
    fwd = pa < pb
    if not fwd.any():
        return np.zeros(m + 1, dtype=_I)
    tensors, which = np.unique(ten[fwd], return_inverse=True)
    last = np.full(len(tensors), -1, dtype=_I)
    np.maximum.at(last, which, pb[fwd])
    start = np.empty(len(tensors), dtype=_I)
    start[which] = pa[fwd]  # one producer per tensor
    diff = np.bincount(start + 1, minlength=m + 2) - np.bincount(last + 1, minlength=m + 2)
    return np.cumsum(diff)[: m + 1]


def _part_count(total: float, size: int) -> int:
    """Parts for ``total`` boxes: enough of ``size``, or, past ``FANOUT`` of them, as many parts
    of parts as keep every level within ``FANOUT``.

    Cuts move by up to ``WINDOW`` either way, so a part of parts gets fewer than ``FANOUT``
    shares: one that came out large still splits into ``FANOUT`` parts at most, not into parts
    of parts again. With ``size`` 180 the first view's path down (at each level one part open,
    the others boxes) stays within 300 boxes for levels of 100k boxes and more.
    """
    count = ceil(total / size)
    while count > FANOUT:
        count = ceil(count * (1 + 2 * WINDOW) / FANOUT)
    return max(count, 2)


def _split(
    before: np.ndarray, cross: np.ndarray, a: int, b: int, limit: int, size: int
) -> list[_Part]:
    """The parts of places [a, b): ``before[c]`` is the boxes before place c, ``cross[c]`` the
    tensors live across a cut there. A part of more than ``limit`` boxes is split in turn."""
    k = _part_count(float(before[b] - before[a]), size)
    parts: list[_Part] = []
    for lo, hi in pairwise([a, *_cuts(before, cross, a, b, k), b]):
        crowded = before[hi] - before[lo] > limit
        parts.append((lo, hi, _split(before, cross, lo, hi, limit, size) if crowded else []))
    return parts


def _cuts(before: np.ndarray, cross: np.ndarray, a: int, b: int, k: int) -> list[int]:
    """``k - 1`` cuts in (a, b), each the narrowest place within ``WINDOW`` of a part's size of
    its even share (ties: the nearest to it, then the first)."""
    step = float(before[b] - before[a]) / k
    half = WINDOW * step
    cuts: list[int] = []
    prev = a
    for j in range(1, k):
        ideal = float(before[a]) + j * step
        lo = max(int(np.searchsorted(before, ideal - half, "left")), prev + 1)
        hi = min(int(np.searchsorted(before, ideal + half, "right")) - 1, b - (k - j))
        if lo > hi:  # nothing in the window (places without boxes, or a tiny level)
            c = min(max(int(np.searchsorted(before, ideal)), prev + 1), b - (k - j))
        else:
            cand = np.arange(lo, hi + 1)
            c = int(cand[np.lexsort((np.abs(before[cand] - ideal), cross[cand]))[0]])
        cuts.append(c)
        prev = c
    return cuts


class _Maker:
    """The group nodes of one level's parts; the children in ``ordered`` are re-parented."""

    def __init__(self, graph: Graph, ordered: np.ndarray, weight: np.ndarray, taken: set[str]):
        self.nodes = graph.nodes
        self.ordered = ordered.tolist()
        self.weight = weight
        self.taken = taken
        self.groups: list[Node] = []

    def parts(self, tree: list[_Part], parent_id: str | None) -> list[str]:
        """Make the groups of ``tree`` under ``parent_id``, outer before inner; their ids."""
        ids: list[str] = []
        base = parent_id or ""
        for j, (a, b, inner) in enumerate(tree, 1):
            gid = base + f"#part{j}"
            while gid in self.taken:
                gid += "#section"
            self.taken.add(gid)
            ids.append(gid)
            metadata: dict[str, object] = {
                "name": f"part {j} of {len(tree)}{self._span(a, b)}",
                "derived": "section",
            }
            if parent_id is not None:
                metadata["parent_id"] = parent_id
            group = Node(gid, "Section", [], [], {}, metadata)
            self.groups.append(group)
            if inner:
                metadata["children_ids"] = self.parts(inner, gid)
            else:
                kids = self.ordered[a:b]
                for k in kids:
                    node = self.nodes[k]
                    node.metadata = {**node.metadata, "parent_id": gid}  # may be shared
                metadata["children_ids"] = [self.nodes[k].id for k in kids]
        return ids

    def _span(self, a: int, b: int) -> str:
        """``: Conv … Concat``, the first and last boxes of places [a, b)."""
        boxed = np.flatnonzero(self.weight[a:b])
        if not boxed.size:
            return ""
        first = self._label(self.ordered[a + int(boxed[0])])
        last = self._label(self.ordered[a + int(boxed[-1])])
        return f": {first}" if boxed.size == 1 else f": {first} \u2026 {last}"

    def _label(self, k: int) -> str:
        node = self.nodes[k]
        name = node.metadata.get("name")
        if isinstance(name, str) and name and "children_ids" in node.metadata:
            return name  # a group: its name says more than "Scope"
        return node.op_type


def _replace_children(group: Node, moved: set[str], part_ids: list[str]) -> None:
    """The group lists its parts instead of the children moved into them."""
    old = group.metadata.get("children_ids")
    rest = [k for k in old if k not in moved] if isinstance(old, list) else []
    group.metadata = {**group.metadata, "children_ids": [*part_ids, *rest]}


def without_sections(graph: Graph) -> Graph:
    """``graph`` as its file had it: derived section and cluster groups (``DRAWN_ONLY``)
    removed and their members given back to the group's parent. They are a way of drawing,
    made again on every load, so that saving never writes them into a file."""
    sections = {n.id: n for n in graph.nodes if n.metadata.get("derived") in DRAWN_ONLY}
    if not sections:
        return graph

    def home(node_id: object) -> object:  # the nearest enclosing group that is not a section
        seen = 0
        while isinstance(node_id, str) and node_id in sections and seen <= len(sections):
            node_id = sections[node_id].metadata.get("parent_id")
            seen += 1
        return node_id

    def unfolded(ids: list[object]) -> list[object]:
        out: list[object] = []
        for k in ids:
            if isinstance(k, str) and k in sections:
                out.extend(unfolded(list(sections[k].metadata.get("children_ids") or [])))
            else:
                out.append(k)
        return out

    copy = graph.snapshot()
    nodes = []
    for node in copy.nodes:
        if node.id in sections:
            continue
        meta = node.metadata
        pid = meta.get("parent_id")
        kids = meta.get("children_ids")
        if (isinstance(pid, str) and pid in sections) or (
            isinstance(kids, list) and any(isinstance(k, str) and k in sections for k in kids)
        ):
            meta = dict(meta)
            if isinstance(pid, str) and pid in sections:
                parent = home(pid)
                if isinstance(parent, str):
                    meta["parent_id"] = parent
                else:
                    meta.pop("parent_id", None)
            if isinstance(kids, list):
                meta["children_ids"] = unfolded(kids)
            node.metadata = meta
        nodes.append(node)
    copy.nodes = nodes
    copy.invalidate()
    return copy
