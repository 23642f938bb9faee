"""The layout pipeline: one readable list of timed phases, arrays in and arrays out."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from xocview.layout.acyclic import feedback_edges
from xocview.layout.components import components, rows, side_by_side
from xocview.layout.graph import LayoutGraph
from xocview.layout.normalize import Layered, normalize
from xocview.layout.order import Layers, order_layers
from xocview.layout.position import (
    balance,
    centered_layers,
    layer_offsets,
    layer_sequence,
    layer_y,
    leaves,
)
from xocview.layout.rank import assign_ranks
from xocview.layout.route import route_edges
from xocview.layout.wrap import plan_columns

__all__ = ["LayoutResult", "layout"]

_I = np.int64


@dataclass
class LayoutResult:
    """Node centres, one polyline per input edge (source to target) and the drawing's size."""

    x: np.ndarray
    y: np.ndarray
    points: Sequence[np.ndarray]
    width: float
    height: float
    rank: np.ndarray = field(repr=False)
    order: np.ndarray = field(repr=False)
    reversed: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, dtype=bool))
    crossings: int = 0
    timings: dict[str, float] = field(default_factory=dict, repr=False)
    outlines: list[np.ndarray] = field(default_factory=list, repr=False)  # nested layouts


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
    pin_first: np.ndarray | None = None,
    pin_last: np.ndarray | None = None,
    wrap: tuple[float, ...] | None = None,
) -> LayoutResult:
    """Lay out a directed graph in layers (Sugiyama): top-to-bottom ("TB") or left-to-right.

    ``order_hint``, one float per node (NaN for nodes it does not know), keeps the left-to-right
    order of a previous layout (pass its x) so that a relayout after collapse/expand stays
    stable (groups are laid out by ``nested.nested_layout``, one flat layout per group).
    ``pin_first``/``pin_last`` (masks) put nodes on the first/last layer: the ports where a
    group's outside edges enter and leave. ``wrap`` = (max_aspect, target[, room]): a
    drawing taller than max_aspect times its width (and than the room, a height, by default
    ``wrap.MIN_HEIGHT``) is wrapped into columns, no taller than the room where one is given.
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
    if pin_first is not None or pin_last is not None:
        rank = _pinned(rank, pin_first, pin_last)
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
    seq, first = layer_sequence(lg.rank, pos)
    leaf = leaves(lg.num_nodes, lg.seg_src, lg.seg_dst, dummy)
    off = layer_offsets(seq, first, dummy, w_all, node_sep, node_sep / 2)
    x = centered_layers(seq, first, off, leaf)
    x = balance(x, seq, first, lg.rank, lg.seg_src, lg.seg_dst, dummy, off, leaf)
    x = side_by_side(x, w_all, comp, node_sep * 2)
    centres = layer_y(lg.rank, h_all, layers.count, rank_sep) if n else np.zeros(0)
    y = centres[lg.rank] if n else np.zeros(0)
    columns = None
    if wrap is not None and n:
        tallest = np.zeros(layers.count)
        np.maximum.at(tallest, lg.rank, h_all)
        columns = plan_columns(
            lg.rank,
            x,
            w_all,
            centres,
            tallest,
            lg.rank[lg.seg_src],
            _origins(lg)[lg.seg_src],
            max_aspect=wrap[0],
            target=wrap[1],
            room=wrap[2] if len(wrap) > 2 else None,
            gap=node_sep * 2,
        )
    step("position")
    mask_rev = np.zeros(len(src), dtype=bool)
    mask_rev[np.flatnonzero(~loop)] = rev
    half = np.zeros(layers.count)
    np.maximum.at(half, lg.rank, h_all / 2)
    points = route_edges(lg, x, y, w_all, h_all, src, dst, mask_rev, loop, half)
    if columns is not None:
        points = columns.lines(points, src)
        x, y = columns.move(x, y)
    elif wrap is not None and n:
        x, y, points = _in_rows(x, y, w_all, h_all, comp, points, src, node_sep * 2, wrap[1])
    step("route")
    x, y = x[:n], y[:n]
    if direction == "LR":
        x, y = y, x
        points = [p[:, ::-1].copy() for p in points]
        w, h = h, w
    width, height = _extent(x, y, w, h, points)
    return LayoutResult(x, y, points, width, height, rank, pos[:n], mask_rev, crossings, times)


def _in_rows(
    x: np.ndarray,
    y: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    comp: np.ndarray,
    points: list[np.ndarray],
    src: np.ndarray,
    gap: float,
    target: float,
) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Many components too wide for one row go into rows; each edge moves with its source's
    component (edges never join two components)."""
    shift = rows(x, y, w, h, comp, gap, target)
    if shift is None:
        return x, y, points
    dx, dy = shift
    moved = [p + np.array([dx[s], dy[s]]) for p, s in zip(points, src.tolist(), strict=True)]
    return x + dx, y + dy, moved


def _origins(lg: Layered) -> np.ndarray:
    """The real node each node's edge comes from: itself, or its dummy chain's source."""
    origin = np.arange(lg.num_nodes, dtype=_I)
    if lg.num_nodes > lg.num_real:
        chain_of = np.repeat(np.arange(len(lg.pair_src)), np.diff(lg.chain_ptr))
        is_d = lg.chain_nodes >= lg.num_real
        origin[lg.chain_nodes[is_d]] = lg.pair_src[chain_of[is_d]]
    return origin


def _pinned(rank: np.ndarray, first: np.ndarray | None, last: np.ndarray | None) -> np.ndarray:
    """Ranks with the ``first`` nodes alone on layer 0 and the ``last`` alone on the last.

    Only edges leaving a first node or entering a last node grow, so ranks stay valid."""
    n = len(rank)
    first = np.zeros(n, dtype=bool) if first is None else np.asarray(first, dtype=bool)
    last = np.zeros(n, dtype=bool) if last is None else np.asarray(last, dtype=bool)
    inner = ~first & ~last
    out = rank.copy()
    if inner.any():
        out = out - int(out[inner].min()) + int(first.any())
        out[last] = int(out[inner].max()) + 1
    else:
        out[last] = int(first.any())
    out[first] = 0
    return out


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
