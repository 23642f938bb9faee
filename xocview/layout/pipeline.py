"""The layout pipeline: one readable list of timed phases, arrays in and arrays out."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from xocview.layout.acyclic import feedback_edges
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
) -> LayoutResult:
    """Lay out a directed graph in layers (Sugiyama): top-to-bottom ("TB") or left-to-right.

    ``order_hint``, one float per node (NaN for nodes it does not know), keeps the left-to-right
    order of a previous layout (pass its x) so that a relayout after collapse/expand stays
    stable. Raises ValueError for inconsistent arrays or an unknown direction.
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
    step("normalize")
    hint = None if order_hint is None else np.asarray(order_hint, dtype=np.float64)
    pos = order_layers(lg, comp, hint)
    layers = Layers(lg, comp)
    crossings = layers.crossings(pos)
    step("order")
    dummy = np.arange(lg.num_nodes) >= n
    w_all = np.concatenate([w, np.zeros(lg.num_nodes - n)])
    h_all = np.concatenate([h, np.zeros(lg.num_nodes - n)])
    ordered = [m[np.argsort(pos[m])] for m in layers.nodes]
    x = centered_layers(ordered, dummy, w_all, node_sep, node_sep / 2)
    x = balance(x, ordered, lg.seg_src, lg.seg_dst, dummy, w_all, node_sep, node_sep / 2)
    x = side_by_side(x, w_all, comp, node_sep * 2)
    y = layer_y(lg.rank, h_all, layers.count, rank_sep)[lg.rank] if n else np.zeros(0)
    step("position")
    mask_rev = np.zeros(len(src), dtype=bool)
    mask_rev[np.flatnonzero(~loop)] = rev
    points = route_edges(lg, x, y, w_all, h_all, src, dst, mask_rev, loop)
    step("route")
    x, y = x[:n], y[:n]
    if direction == "LR":
        x, y = y, x
        points = [p[:, ::-1].copy() for p in points]
        w, h = h, w
    width, height = _extent(x, y, w, h, points)
    return LayoutResult(x, y, points, width, height, rank, pos[:n], mask_rev, crossings, times)


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
