"""Hierarchy-first layout: every expanded group laid out on its own, inside a box of its own.

Laying out the whole visible graph at once and keeping each group's members in a band (the
border-node method) gives jagged outlines whose spikes overlap their neighbours, and costs
the whole graph on every expand. Here, as in Model Explorer, each group's direct children
(nodes, and expanded sub-groups as single boxes of the size their own layout needs) are laid
out with the flat layered layout, and the group becomes a plain rectangle: a title band, then
its content. An edge that crosses a group's border enters through a port on the group's first
layer and leaves through one on its last, one port per outside source, so the pieces of the
edge (inside the source's groups, between the groups, inside the target's groups) join on
the borders into one polyline.

A group may be drawn with a box of its own (an If or Loop: an operator and a container): its
box becomes the frame's header, and edges to and from it meet the frame's border.

Given the previous layout's state and stable keys for items and groups, a layout redoes only
the levels whose problems changed (nested_state.py): one expand or collapse costs that group,
its ancestors and the routes through them, not the whole visible graph.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from xocview.layout.memo import LayoutMemo, hint_ranks, problem_key
from xocview.layout.nested_edges import Level, Stale, join, plan
from xocview.layout.nested_frames import (
    BELOW_HEAD,
    FRAME_PAD,
    HEAD_GAP,
    TITLE_BAND,
    Placed,
    depths,
    frame_box,
    gather,
    place,
)
from xocview.layout.nested_state import NestedState, NestKeys, changes, snapshot, totals
from xocview.layout.pipeline import LayoutResult, layout
from xocview.layout.polylines import Polylines, gather_index

__all__ = ["FRAME_PAD", "MEMO", "TITLE_BAND", "NestKeys", "NestedState", "nested_layout"]

MEMO = LayoutMemo()  # every group's layout, by its problem: shared by all drawings

_I = np.int64


def nested_layout(
    num_nodes: int,
    sources: np.ndarray,
    targets: np.ndarray,
    widths: np.ndarray,
    heights: np.ndarray,
    *,
    member: np.ndarray,
    parent: np.ndarray,
    owner: np.ndarray | None = None,
    title_width: np.ndarray | None = None,
    direction: str = "TB",
    order_hint: np.ndarray | None = None,
    node_sep: float = 24.0,
    rank_sep: float = 48.0,
    wrap: tuple[float, ...] | None = None,
    progress: Callable[[int, int], None] | None = None,
    keys: NestKeys | None = None,
    previous: NestedState | None = None,
) -> LayoutResult:
    """Lay out items nested in groups; ``result.outlines[c]`` is group c's rectangle.

    ``member[i]`` is item i's innermost group (-1 for none), ``parent[c]`` group c's enclosing
    group, ``owner[c]`` an item drawn as group c's header (-1 for none), ``title_width[c]`` the
    width group c's title needs. Other arguments as for ``layout``, applied to every group.
    ``progress(done, total)`` is called before each group's layout (weighted by its units) and
    may raise to stop the work: that is how a window cancels a layout.

    ``keys`` names items and groups stably; with them, ``previous`` (the ``state`` of an earlier
    result) lets the layout keep what did not change, and ``order_hint`` only steers the levels
    laid out again. ``result.state`` is this layout's.
    """
    n = int(num_nodes)
    src = np.asarray(sources, dtype=_I).reshape(-1)
    dst = np.asarray(targets, dtype=_I).reshape(-1)
    w = np.asarray(widths, dtype=np.float64).reshape(-1)
    h = np.asarray(heights, dtype=np.float64).reshape(-1)
    member = np.asarray(member, dtype=_I).reshape(-1)
    parent = np.asarray(parent, dtype=_I).reshape(-1)
    c_count = len(parent)
    if len(member) != n:
        raise ValueError(f"member needs {n} values, got {len(member)}")
    if len(parent) and (parent.max() >= c_count or member.max(initial=-1) >= c_count):
        raise ValueError(f"groups must be numbered in [0, {c_count})")
    owner = np.full(c_count, -1, dtype=_I) if owner is None else np.asarray(owner, dtype=_I)
    tw = np.zeros(c_count) if title_width is None else np.asarray(title_width, dtype=np.float64)
    keys = keys if keys is not None else NestKeys.plain(n, c_count)
    keys.check(n, c_count)
    args = (n, src, dst, widths, heights)
    again = dict(
        member=member, parent=parent, owner=owner, title_width=title_width, direction=direction,
        order_hint=order_hint, node_sep=node_sep, rank_sep=rank_sep, wrap=wrap,
        progress=progress, keys=keys,
    )  # fmt: skip
    if direction == "LR":
        w, h = h, w
    lr = direction == "LR"
    ks, fs = keys.item_space, keys.frame_space
    root = fs  # the top level's id; a group's level is its frame key
    fk = keys.frame
    ik = keys.item
    slot_up = np.append(np.where(parent >= 0, parent, c_count), -1).astype(_I)
    up = np.full(fs + 1, -1, dtype=_I)
    level_of_slot = np.append(fk, root)  # a group slot's level; slot c_count is the top
    up[fk] = level_of_slot[slot_up[:c_count]]
    depth = np.zeros(fs + 1, dtype=_I)
    depth[fk] = depths(slot_up, c_count)[:c_count]
    item_level = level_of_slot[np.where(member >= 0, member, c_count)]
    unit = ik.copy()
    owned = np.flatnonzero(owner >= 0)
    unit[owner[owned]] = ks + fk[owned]
    item_level[owner[owned]] = up[fk[owned]]

    # per frame: the band across its top, the header box's width as seen, the title's width
    band_s = np.full(c_count, TITLE_BAND)
    band_s[owned] = (w if lr else h)[owner[owned]] + 8.0 + BELOW_HEAD
    head_s = np.zeros(c_count)
    head_s[owned] = (h if lr else w)[owner[owned]]
    settings = (direction, float(node_sep), float(rank_sep), wrap)
    now = snapshot(settings, keys, item_level, unit, w, h, up, band_s, head_s, tw, src, dst)
    uu, vv = unit[src], unit[dst]
    if previous is not None and now.compatible(previous.now):
        ch = changes(previous, now, up, depth, uu, vv, ik[src], ik[dst])
        dirty, replan, prev_edge = ch.dirty, ch.replan, ch.previous_edge
    else:
        previous = None
        dirty = np.ones(fs + 1, dtype=bool)
        replan = np.ones(len(src), dtype=bool)
        prev_edge = np.full(len(src), -1, dtype=_I)
    present = np.r_[fk, root]
    levels: dict[int, Level] = {}
    for lvl in present.tolist():
        if dirty[lvl]:
            levels[lvl] = Level()
        else:
            assert previous is not None
            levels[lvl] = previous.levels[lvl]
    for i in np.flatnonzero((unit < ks) & dirty[item_level]).tolist():
        levels[int(item_level[i])].node("u", int(unit[i]))
    for c in np.flatnonzero(dirty[up[fk]]).tolist():
        levels[int(up[fk[c]])].node("u", ks + int(fk[c]))

    # every edge as pieces: (level, local edge, side) with side -1 leaving, 0 across, +1 entering
    plans: list[list[tuple[int, int, int]]]  # empty: no piece to lay out
    if previous is not None:
        kept_plans = previous.plans
        plans = [kept_plans[i] for i in np.maximum(prev_edge, 0).tolist()]
    else:
        plans = [[] for _ in range(len(src))]
    level_of_key = np.maximum(now.level, 0)
    todo_edges = np.flatnonzero(replan).tolist()
    try:
        for e, a, b in zip(
            todo_edges, uu[todo_edges].tolist(), vv[todo_edges].tolist(), strict=True
        ):
            plans[e] = plan(a, b, ks, level_of_key, up, depth, levels)
    except Stale:  # a kept level lacks a piece: start afresh
        return nested_layout(*args, **again)  # type: ignore[arg-type]

    # lay out the deepest groups first: a group's box is the size of its own layout
    box = previous.box.copy() if previous is not None else np.zeros((fs + 1, 4))
    hints = _hints(order_hint, n, member, parent, c_count)
    hint_item = np.full(ks, np.nan)
    hint_frame = np.full(fs + 1, np.nan)
    if hints is not None:
        hint_item[ik] = hints[:n]
        hint_frame[fk] = hints[n:]
    todo = sorted((lvl for lvl in present.tolist() if dirty[lvl]), key=lambda c: -depth[c])
    total = sum(len(levels[lvl].units) + len(levels[lvl].src) for lvl in todo)
    done = 0
    for lvl in todo:
        lv = levels[lvl]
        if progress is not None:
            progress(done, total)
        done += len(lv.units) + len(lv.src)
        units = np.asarray(lv.units, dtype=_I)
        is_item = (units >= 0) & (units < ks)
        is_group = units >= ks
        k = len(units)
        lw, lh = np.zeros(k), np.zeros(k)
        lw[is_item], lh[is_item] = now.w[units[is_item]], now.h[units[is_item]]
        lw[is_group], lh[is_group] = box[units[is_group] - ks, 0], box[units[is_group] - ks, 1]
        kinds = [kind for kind, _ in lv.local]
        l_src, l_dst = np.asarray(lv.src, dtype=_I), np.asarray(lv.dst, dtype=_I)
        l_hint = None
        if hints is not None:
            raw = np.full(k, np.nan)
            raw[is_item] = hint_item[units[is_item]]
            raw[is_group] = hint_frame[units[is_group] - ks]
            # a level none of whose units were drawn before (a group opened again) is laid
            # out as the first time, and so found in the memo
            l_hint = None if np.isnan(raw).all() else hint_ranks(raw)
        first = np.array([kind == "in" for kind in kinds], dtype=bool)
        last = np.array([kind == "out" for kind in kinds], dtype=bool)
        key = problem_key(k, l_src, l_dst, lw, lh, l_hint, first, last, node_sep, rank_sep, wrap)
        res = MEMO.get(
            key,
            k + len(l_src),
            partial(
                layout,
                k,
                l_src,
                l_dst,
                lw,
                lh,
                order_hint=l_hint,
                node_sep=node_sep,
                rank_sep=rank_sep,
                pin_first=first,
                pin_last=last,
                wrap=wrap,
            ),
        )
        lv.result, lv.placed = res, Placed.of(units, res, ks)
        if lvl != root:
            tw_l, band_l, head_l, header = now.frame_box[lvl].tolist()
            box[lvl] = frame_box(res, tw_l, band_l, head_l, bool(header), lr)

    placed = [levels[lvl].placed for lvl in present.tolist()]
    g = gather(present.tolist(), (p for p in placed if p is not None))
    origin, left, top = place(g, depth, box)
    box_w, box_h = box[:, 0], box[:, 1]
    x_key = np.zeros(ks)
    y_key = np.zeros(ks)
    rank_key = np.zeros(ks, dtype=_I)
    x_key[g.items] = origin[g.item_level, 0] + g.ix
    y_key[g.items] = origin[g.item_level, 1] + g.iy
    rank_key[g.items] = g.rank
    x, y, rank = x_key[ik], y_key[ik], rank_key[ik]
    heads_at = fk[owned]
    along = 4.0 + (w if lr else h)[owner[owned]] / 2  # the header's centre, into the band
    if lr:
        x[owner[owned]] = left[heads_at] + along
        y[owner[owned]] = top[heads_at] + box_h[heads_at] / 2
    else:
        x[owner[owned]] = left[heads_at] + FRAME_PAD + tw[owned] + HEAD_GAP + head_s[owned] / 2
        y[owner[owned]] = top[heads_at] + along
    # what an entering edge must not cross in each frame's top band: the title (and the
    # header box after it); TB only, since across the band is not on the entering side
    head_span = np.full((fs + 1, 2), np.nan)
    if not lr:
        head_span[fk, 0] = left[fk]
        head_span[fk, 1] = left[fk] + FRAME_PAD + tw + 8.0
        head_span[heads_at, 1] = x[owner[owned]] + w[owner[owned]] / 2 + 8.0
    # the edges whose levels were kept move with their level; the others are joined again
    heads_of = set(owner[owned].tolist())
    lca = previous.lca[np.maximum(prev_edge, 0)] if previous is not None else np.full(len(src), -1)
    n_points = np.zeros(len(src), dtype=_I)
    piece_counts = np.zeros(len(src), dtype=_I)
    if previous is not None:
        n_points[:] = previous.lines.counts[np.maximum(prev_edge, 0)]
        piece_counts[:] = np.diff(previous.plan_ptr)[np.maximum(prev_edge, 0)]
    fresh: list[np.ndarray] = []
    redo = np.flatnonzero(replan | (lca < 0))
    for e in redo.tolist():
        pieces = plans[e]
        piece_counts[e] = len(pieces)
        if pieces:
            across = [lvl for lvl, _, side in pieces if side == 0]
            lca[e] = across[0] if across else pieces[0][0]
            line = join(pieces, levels, origin, top, box_h, head_span, left, box_w)
        else:  # between a group's header and its own members: straight down
            lca[e] = -1
            s_item, d_item = int(src[e]), int(dst[e])
            line = np.array(
                [[x[s_item], y[s_item] + h[s_item] / 2], [x[d_item], y[d_item] - h[d_item] / 2]]
            )
        if dst[e] in heads_of:  # an edge into an open If or Loop ends on its header box
            t = int(dst[e])
            reach = w[t] / 2 * 0.6
            line[-1] = (np.clip(line[-1, 0], x[t] - reach, x[t] + reach), y[t] - h[t] / 2)
        n_points[e] = len(line)
        fresh.append(line)
    ptr = np.r_[0, np.cumsum(n_points)].astype(_I)
    pts = np.empty((int(ptr[-1]), 2))
    moved = np.ones(len(src), dtype=bool)
    moved[redo] = False
    if previous is not None and moved.any():
        kept = np.flatnonzero(moved)
        old = prev_edge[kept]
        shift = origin - previous.origin
        at = gather_index(ptr[kept], n_points[kept])
        pts[at] = previous.lines.points[gather_index(previous.lines.ptr[old], n_points[kept])]
        pts[at] += np.repeat(shift[lca[kept]], n_points[kept], axis=0)
    if fresh:
        pts[gather_index(ptr[redo], n_points[redo])] = np.concatenate(fresh)
    lines = Polylines(pts, ptr)
    plan_ptr = np.r_[0, np.cumsum(piece_counts)].astype(_I)
    plan_levels = np.empty(int(plan_ptr[-1]), dtype=_I)
    if previous is not None and moved.any():
        plan_levels[gather_index(plan_ptr[kept], piece_counts[kept])] = previous.plan_levels[
            gather_index(previous.plan_ptr[old], piece_counts[kept])
        ]
    if len(redo):
        plan_levels[gather_index(plan_ptr[redo], piece_counts[redo])] = np.fromiter(
            (lvl for e in redo.tolist() for lvl, _, _ in plans[e]), dtype=_I
        )
    crossings, timings = totals(previous, levels, todo)
    state = NestedState(
        now=now,
        up=up,
        levels=levels,
        plans=plans,
        plan_ptr=plan_ptr,
        plan_levels=plan_levels,
        lca=lca,
        lines=lines,
        box=box,
        origin=origin,
        crossings=crossings,
        timings=timings,
    )
    for lvl in todo:  # the levels made now; the kept ones are frozen already
        levels[lvl].frozen = True
    l_, t_ = left[fk], top[fk]
    r_, b_ = l_ + box_w[fk], t_ + box_h[fk]
    top_layout = levels[root].result
    assert top_layout is not None
    width, height = top_layout.width, top_layout.height
    if lr:
        x, y = y, x
        lines = lines.turned()
        l_, t_, r_, b_ = t_, l_, b_, r_
        width, height = height, width
    corners = np.stack([np.c_[r_, t_], np.c_[r_, b_], np.c_[l_, b_], np.c_[l_, t_]], axis=1)
    out = LayoutResult(
        x, y, lines, width, height, rank, np.zeros(n, dtype=_I),
        np.zeros(len(src), dtype=bool), crossings, dict(timings),
    )  # fmt: skip
    out.outlines = list(corners)
    out.state = state  # type: ignore[attr-defined]
    return out


def _hints(
    order_hint: np.ndarray | None, n: int, member: np.ndarray, parent: np.ndarray, c_count: int
) -> np.ndarray | None:
    """A hint per item, then per group: a group takes its leftmost member's."""
    if order_hint is None:
        return None
    hint = np.asarray(order_hint, dtype=np.float64).reshape(-1)
    out = np.concatenate([hint, np.full(c_count, np.nan)])
    level = member.copy()
    value = hint.copy()
    while True:
        inside = level >= 0
        if not inside.any():
            break
        np.fmin.at(out, n + level[inside], value[inside])
        level = np.where(inside, parent[np.maximum(level, 0)], -1)
    return out
