"""The layout pipeline: one readable list of timed phases, arrays in and arrays out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from xocview.layout.acyclic import feedback_edges
from xocview.layout.clusters import BORDER_WIDTH, CLUSTER_PAD, Clusters, add_borders
from xocview.layout.components import components, side_by_side
from xocview.layout.graph import LayoutGraph
from xocview.layout.normalize import Layered, normalize
from xocview.layout.order import Layers, order_layers
from xocview.layout.position import balance, centered_layers, layer_y
from xocview.layout.rank import assign_ranks
from xocview.layout.route import route_edges

__all__ = ["LayoutResult", "layout"]

_I = np.int64


@dataclass
class LayoutResult:
    """Node centres, one polyline per input edge (source to target) and the drawing's size."""

    x: np.ndarray
    y: np.ndarray
    points: list[np.ndarray]
    width: float
    height: float
    rank: np.ndarray = field(repr=False)
    order: np.ndarray = field(repr=False)
    reversed: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=bool))
    crossings: int = 0
    timings: dict[str, float] = field(default_factory=dict, repr=False)
    outlines: list[np.ndarray] = field(default_factory=list, repr=False)


def layout(
    num_nodes: int,
    sources: np.ndarray,
    targets: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    *,
    direction: str = "TB",
    order_hint: np.ndarray | None = None,
    node_sep: float = 24.0,
    rank_sep: float = 48.0,
    clusters: tuple[np.ndarray, np.ndarray] | None = None,
) -> LayoutResult:
    """Lay out a directed graph in layers (Sugiyama): top-to-bottom ("TB") or left-to-right.

    ``order_hint``, one float per node (NaN for nodes it does not know), keeps the left-to-right
    order of a previous layout (pass its x) so that a relayout after collapse/expand stays
    stable. ``clusters`` = (innermost cluster of each node or -1, parent of each cluster or -1)
    keeps every cluster's nodes in one band; ``result.outlines`` gives each cluster's outline.
    Raises ValueError for inconsistent arrays or an unknown direction.
    """
    n = int(num_nodes)
    src, dst, w, h = _checked(n, sources, targets, widths, heights, direction)
    if direction == "LR":
        w, h = h, w
    times: dict[str, float] = {}
    clock = time.perf_counter()

    def step(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        times[name] = now - clock
        clock = now

    loop = src == dst
    s, d = src[~loop], dst[~loop]
    rev = feedback_edges(LayoutGraph(n, s, d))
    ls, ld = np.where(rev, d, s), np.where(rev, s, d)
    step("acyclic")
    rank = assign_ranks(LayoutGraph(n, ls, ld)) if n else np.zeros(0, dtype=_I)
    step("rank")
    lg = normalize(n, ls, ld, rank)
    comp_real = components(n, ls, ld)
    comp = np.concatenate([comp_real, _dummy_components(lg, comp_real)])
    cl = None
    if clusters is not None and len(clusters[1]):
        comp_real = _join_clusters(
            comp_real, np.asarray(clusters[0], dtype=_I), np.asarray(clusters[1], dtype=_I)
        )
        comp = np.concatenate([comp_real, _dummy_components(lg, comp_real)])
        lg, cl = add_borders(
            lg, np.asarray(clusters[0], dtype=_I), np.asarray(clusters[1], dtype=_I)
        )
        comp = np.concatenate([comp, _border_components(cl, comp)])
    step("normalize")
    hint = None if order_hint is None else np.asarray(order_hint, dtype=np.float64)
    pos = order_layers(lg, comp, hint, cl)
    layers = Layers(lg, comp)
    crossings = layers.crossings(pos)
    step("order")
    dummy = np.arange(lg.num_nodes) >= n
    w_all = np.concatenate([w, np.zeros(lg.num_nodes - n)])
    if cl is not None:
        w_all[cl.first_border :] = BORDER_WIDTH
    h_all = np.concatenate([h, np.zeros(lg.num_nodes - n)])
    ordered = [m[np.argsort(pos[m])] for m in layers.nodes]
    x = centered_layers(ordered, dummy, w_all, node_sep, node_sep / 2)
    stiff = None
    if cl is not None:
        stiff = np.zeros(lg.num_nodes, dtype=bool)
        stiff[cl.first_border :] = True
    x = balance(
        x, ordered, lg.seg_src, lg.seg_dst, dummy, w_all, node_sep, node_sep / 2, stiff=stiff
    )
    x = side_by_side(x, w_all, comp, node_sep * 2)
    gaps = _cluster_gaps(cl, layers.count, rank_sep) if cl is not None else rank_sep
    centres = layer_y(lg.rank, h_all, layers.count, gaps) if n else np.zeros(0)
    y = centres[lg.rank] if n else np.zeros(0)
    outlines = _outlines(cl, x, centres, lg.rank, h_all, layers.count) if cl is not None else []
    step("position")
    mask_rev = np.zeros(len(src), dtype=bool)
    mask_rev[np.flatnonzero(~loop)] = rev
    points = route_edges(lg, x, y, w_all, h_all, src, dst, mask_rev, loop)
    step("route")
    x, y = x[:n], y[:n]
    if direction == "LR":
        x, y = y, x
        points = [p[:, ::-1].copy() for p in points]
        outlines = [o[:, ::-1].copy() for o in outlines]
        w, h = h, w
    width, height = _extent(x, y, w, h, points)
    for o in outlines:
        if len(o):
            width, height = max(width, float(o[:, 0].max())), max(height, float(o[:, 1].max()))
    result = LayoutResult(x, y, points, width, height, rank, pos[:n], mask_rev, crossings, times)
    result.outlines = outlines
    return result


def _join_clusters(comp: np.ndarray, member: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Components joined through clusters: a cluster's members must sit side by side with
    each other, not with the components they came from."""
    top = member.copy()
    for _ in range(len(parent)):  # climb to each member's outermost cluster
        up = np.where(top >= 0, parent[np.maximum(top, 0)], -1)
        top = np.where(up >= 0, up, top)
    label = np.arange(int(comp.max()) + 1 if len(comp) else 0, dtype=_I)
    for c in np.unique(top[top >= 0]).tolist():
        joined = np.unique(label[comp[top == c]])
        label[np.isin(label, joined)] = joined.min()
    _, relabelled = np.unique(label[comp], return_inverse=True)
    return relabelled.reshape(-1).astype(_I)


def _border_components(cl: Clusters, comp: np.ndarray) -> np.ndarray:
    """A border node belongs to the component of its cluster's members."""
    first = cl.first_border
    comp_of = np.zeros(len(cl.parent), dtype=_I)
    inner = cl.innermost()[:first]
    has = inner >= 0
    comp_of[inner[has]] = comp[:first][has]
    # a cluster holding only clusters takes a child's component (deepest first)
    for c in np.argsort(-cl.depth_of_cluster).tolist():
        p = int(cl.parent[c])
        if p >= 0 and not has[inner == p].any():
            comp_of[p] = comp_of[c]
    return comp_of[cl.border_cluster]


def _nesting_below(cl: Clusters) -> np.ndarray:
    """How many levels of clusters each cluster holds (0 for one with none inside)."""
    below = np.zeros(len(cl.parent), dtype=_I)
    for c in np.argsort(-cl.depth_of_cluster).tolist():
        p = int(cl.parent[c])
        if p >= 0:
            below[p] = max(below[p], below[c] + 1)
    return below


def _cluster_gaps(cl: Clusters, layers: int, rank_sep: float) -> np.ndarray:
    """The gap after each layer: room for the outlines ending on it and starting below it."""
    below = _nesting_below(cl)
    end_need = np.zeros(layers + 1)
    start_need = np.zeros(layers + 1)
    for c in range(len(cl.parent)):
        ranks = cl.border_rank[cl.border_cluster == c]
        if len(ranks):
            need = CLUSTER_PAD * (1 + below[c])
            end_need[ranks.max()] = max(end_need[ranks.max()], need)
            start_need[ranks.min()] = max(start_need[ranks.min()], need)
    return np.maximum(rank_sep, end_need[:layers] + start_need[1 : layers + 1] + 12.0)


def _outlines(
    cl: Clusters,
    x: np.ndarray,
    centres: np.ndarray,
    rank: np.ndarray,
    heights: np.ndarray,
    layers: int,
) -> list[np.ndarray]:
    """Each cluster's outline: down its right border, up its left border (TB coordinates).

    Each layer's band spans the layer's tallest node plus half the gap to the next; a
    cluster nested in another starting on the same layer is inset so titles do not collide.
    """
    tallest = np.zeros(layers)
    np.maximum.at(tallest, rank, heights)
    first = cl.first_border
    # clusters nested in c: the outline of c is inset by that many steps less than theirs
    below = _nesting_below(cl)
    outs = []
    for c in range(len(cl.parent)):
        pad = CLUSTER_PAD * (1 + below[c])
        mine = np.flatnonzero(cl.border_cluster == c)
        if not len(mine):
            outs.append(np.zeros((0, 2)))
            continue
        ranks = cl.border_rank[mine]
        left = x[first + mine[cl.side[first + mine] < 0]]
        right = x[first + mine[cl.side[first + mine] > 0]]
        rs = np.unique(ranks)
        top = centres[rs] - tallest[rs] / 2 - pad
        bottom = centres[rs] + tallest[rs] / 2 + pad
        right_side = np.column_stack(
            [np.repeat(right, 2), np.ravel(np.column_stack([top, bottom]))]
        )
        left_side = np.column_stack([np.repeat(left, 2), np.ravel(np.column_stack([top, bottom]))])
        outs.append(np.vstack([right_side, left_side[::-1]]))
    return outs


def _dummy_components(lg: Layered, comp_real: np.ndarray) -> np.ndarray:
    """Each dummy belongs to the component of its chain's source."""
    n_dummy = lg.num_nodes - lg.num_real
    out = np.zeros(n_dummy, dtype=_I)
    if n_dummy:
        chain_of = np.repeat(np.arange(len(lg.pair_src)), np.diff(lg.chain_ptr))
        is_d = lg.chain_nodes >= lg.num_real
        out[lg.chain_nodes[is_d] - lg.num_real] = comp_real[lg.pair_src[chain_of[is_d]]]
    return out


def _extent(
    x: np.ndarray, y: np.ndarray, w: np.ndarray, h: np.ndarray, points: list[np.ndarray]
) -> tuple[float, float]:
    if not len(x):
        return 0.0, 0.0
    right = float((x + w / 2).max())
    bottom = float((y + h / 2).max())
    if points:
        allp = np.concatenate(points)
        right = max(right, float(allp[:, 0].max()))
        bottom = max(bottom, float(allp[:, 1].max()))
    return right, bottom


def _checked(
    n: int,
    sources: np.ndarray,
    targets: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    direction: str,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if direction not in ("TB", "LR"):
        raise ValueError(f"direction must be 'TB' or 'LR', not {direction!r}")
    src = np.asarray(sources, dtype=_I).reshape(-1)
    dst = np.asarray(targets, dtype=_I).reshape(-1)
    w = np.asarray(widths, dtype=np.float64).reshape(-1)
    h = np.asarray(heights, dtype=np.float64).reshape(-1)
    if len(src) != len(dst):
        raise ValueError(f"{len(src)} sources but {len(dst)} targets")
    if len(w) != n or len(h) != n:
        raise ValueError(f"widths and heights need {n} values, got {len(w)} and {len(h)}")
    if len(src) and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge endpoints must be node indices in [0, {n})")
    return src, dst, w, h
