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
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from xocview.layout.memo import LayoutMemo, hint_ranks, problem_key
from xocview.layout.nested_edges import Level, join, plan
from xocview.layout.pipeline import LayoutResult, layout

__all__ = ["FRAME_PAD", "MEMO", "TITLE_BAND", "nested_layout"]

MEMO = LayoutMemo()  # every group's layout, by its problem: shared by all drawings

_I = np.int64
FRAME_PAD = 14.0  # between a frame's border and its content (sides and bottom)
TITLE_BAND = 22.0  # the band for a frame's title, above its content
_HEAD_GAP = 12.0  # between a frame's title and its header box
_BELOW_HEAD = 28.0  # between a header box and the frame's content: its edges show


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
    wrap: tuple[float, float] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> LayoutResult:
    """Lay out items nested in groups; ``result.outlines[c]`` is group c's rectangle.

    ``member[i]`` is item i's innermost group (-1 for none), ``parent[c]`` group c's enclosing
    group, ``owner[c]`` an item drawn as group c's header (-1 for none), ``title_width[c]`` the
    width group c's title needs. Other arguments as for ``layout``, applied to every group.
    ``progress(done, total)`` is called before each group's layout (weighted by its units) and
    may raise to stop the work: that is how a window cancels a layout.
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
    if direction == "LR":
        w, h = h, w
    root = c_count
    up = np.where(parent >= 0, parent, root).astype(_I)
    up = np.append(up, -1)
    depth = _depths(up, root)
    unit_of_item = np.arange(n, dtype=_I)
    item_level = np.where(member >= 0, member, root).astype(_I)
    owned = np.flatnonzero(owner >= 0)
    unit_of_item[owner[owned]] = n + owned
    item_level[owner[owned]] = up[owned]
    levels = [Level() for _ in range(c_count + 1)]
    for i in np.flatnonzero(unit_of_item == np.arange(n)).tolist():
        levels[int(item_level[i])].node("u", i)
    for c in range(c_count):
        levels[int(up[c])].node("u", n + c)

    # every edge as pieces: (level, local edge, side) with side -1 leaving, 0 across, +1 entering
    plans: list[list[tuple[int, int, int]]] = []  # empty: no piece to lay out
    for uu, vv in zip(unit_of_item[src].tolist(), unit_of_item[dst].tolist(), strict=True):
        plans.append(plan(uu, vv, n, item_level, up, depth, levels))

    # lay out the deepest groups first: a group's box is the size of its own layout
    results: dict[int, LayoutResult] = {}
    lr = direction == "LR"
    box_w = np.zeros(c_count)
    box_h = np.zeros(c_count)
    band = np.full(c_count, TITLE_BAND)  # across the top of the frame as seen
    band[owned] = (w if lr else h)[owner[owned]] + 8.0 + _BELOW_HEAD
    head = np.zeros(c_count)  # the header box's width as seen
    head[owned] = (h if lr else w)[owner[owned]]
    content_dx = np.zeros(c_count + 1)
    content_dy = np.zeros(c_count + 1)
    hints = _hints(order_hint, n, item_level, up, root)
    total = sum(len(lv.units) + len(lv.src) for lv in levels)
    done = 0
    for lvl in sorted(range(c_count + 1), key=lambda c: -depth[c]):
        lv = levels[lvl]
        if progress is not None:
            progress(done, total)
        done += len(lv.units) + len(lv.src)
        units = np.asarray(lv.units, dtype=_I)
        is_item = (units >= 0) & (units < n)
        is_group = units >= n
        k = len(units)
        lw, lh = np.zeros(k), np.zeros(k)
        lw[is_item], lh[is_item] = w[units[is_item]], h[units[is_item]]
        lw[is_group], lh[is_group] = box_w[units[is_group] - n], box_h[units[is_group] - n]
        kinds = [kind for kind, _ in lv.local]
        l_src, l_dst = np.asarray(lv.src, dtype=_I), np.asarray(lv.dst, dtype=_I)
        l_hint = None if hints is None else hint_ranks(_level_hints(hints, units, n))
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
        results[lvl] = res
        if lvl == root:
            continue
        seen = max(float(tw[lvl]), float(head[lvl]))  # what the title and header need
        if not lr and owner[lvl] >= 0:  # the header stands right of the title
            seen = float(tw[lvl] + _HEAD_GAP + head[lvl])
        if lr:  # laid out top-down, seen turned: the band runs along the layout's left
            inner = max(res.height, seen)
            box_w[lvl] = band[lvl] + res.width + FRAME_PAD
            box_h[lvl] = inner + 2 * FRAME_PAD
            content_dx[lvl] = band[lvl]
            content_dy[lvl] = FRAME_PAD + (inner - res.height) / 2
        else:
            inner = max(res.width, seen)
            box_w[lvl] = inner + 2 * FRAME_PAD
            box_h[lvl] = band[lvl] + res.height + FRAME_PAD
            content_dx[lvl] = FRAME_PAD + (inner - res.width) / 2
            content_dy[lvl] = band[lvl]

    # place top-down: each level's content origin in absolute coordinates
    origin = np.zeros((c_count + 1, 2))
    left = np.zeros(c_count)
    top = np.zeros(c_count)
    for lvl in sorted(range(c_count + 1), key=lambda c: depth[c]):
        res = results[lvl]
        lv = levels[lvl]
        if lvl != root:
            origin[lvl] = (left[lvl] + content_dx[lvl], top[lvl] + content_dy[lvl])
        for local, u in enumerate(lv.units):
            if u >= n:
                c = u - n
                left[c] = origin[lvl, 0] + res.x[local] - box_w[c] / 2
                top[c] = origin[lvl, 1] + res.y[local] - box_h[c] / 2
    x = np.zeros(n)
    y = np.zeros(n)
    rank = np.zeros(n, dtype=_I)
    for lvl in range(c_count + 1):
        res, lv = results[lvl], levels[lvl]
        units = np.asarray(lv.units, dtype=_I)
        sel = np.flatnonzero((units >= 0) & (units < n))
        x[units[sel]] = origin[lvl, 0] + res.x[sel]
        y[units[sel]] = origin[lvl, 1] + res.y[sel]
        rank[units[sel]] = res.rank[sel]
    along = 4.0 + (w if lr else h)[owner[owned]] / 2  # the header's centre, into the band
    if lr:
        x[owner[owned]] = left[owned] + along
        y[owner[owned]] = top[owned] + box_h[owned] / 2
    else:
        x[owner[owned]] = left[owned] + FRAME_PAD + tw[owned] + _HEAD_GAP + head[owned] / 2
        y[owner[owned]] = top[owned] + along
    # what an entering edge must not cross in each frame's top band: the title (and the
    # header box after it); TB only, since across the band is not on the entering side
    head_span = np.full((c_count, 2), np.nan)
    if not lr:
        head_span[:, 0] = left
        head_span[:, 1] = left + FRAME_PAD + tw + 8.0
        head_span[owned, 1] = x[owner[owned]] + w[owner[owned]] / 2 + 8.0
    lines = []
    for pieces, s_item, d_item in zip(plans, src.tolist(), dst.tolist(), strict=True):
        if pieces:
            lines.append(join(pieces, results, origin, top, box_h, head_span, left, box_w))
        else:  # between a group's header and its own members: straight down
            lines.append(
                np.array(
                    [
                        [x[s_item], y[s_item] + h[s_item] / 2],
                        [x[d_item], y[d_item] - h[d_item] / 2],
                    ]
                )
            )
    heads = np.flatnonzero(np.isin(dst, owner[owned]))
    for e in heads.tolist():  # an edge into an open If or Loop ends on its header box
        t = int(dst[e])
        pts = lines[e]
        reach = w[t] / 2 * 0.6
        pts[-1] = (np.clip(pts[-1, 0], x[t] - reach, x[t] + reach), y[t] - h[t] / 2)
    l_, t_, r_, b_ = left, top, left + box_w, top + box_h
    width = results[root].width
    height = results[root].height
    if lr:
        x, y = y, x
        lines = [p[:, ::-1].copy() for p in lines]
        l_, t_, r_, b_ = t_, l_, b_, r_
        width, height = height, width
    outlines = [
        np.array([[r_[c], t_[c]], [r_[c], b_[c]], [l_[c], b_[c]], [l_[c], t_[c]]])
        for c in range(c_count)
    ]
    out = LayoutResult(
        x,
        y,
        lines,
        width,
        height,
        rank,
        np.zeros(n, dtype=_I),
        np.zeros(len(src), dtype=bool),
        sum(r.crossings for r in results.values()),
        {
            phase: sum(r.timings.get(phase, 0.0) for r in results.values())
            for phase in results[root].timings
        },
    )
    out.outlines = outlines
    return out


def _depths(up: np.ndarray, root: int) -> np.ndarray:
    """Nesting depth of every level (the root 0); a cycle in ``parent`` raises ValueError."""
    depth = np.full(len(up), -1, dtype=_I)
    depth[root] = 0
    for c in range(len(up)):
        chain = []
        d = c
        while depth[d] < 0:
            chain.append(d)
            d = int(up[d])
            if len(chain) > len(up):
                raise ValueError("group parents form a cycle")
        for k, lvl in enumerate(reversed(chain)):
            depth[lvl] = depth[d] + 1 + k
    return depth


def _hints(
    order_hint: np.ndarray | None, n: int, item_level: np.ndarray, up: np.ndarray, root: int
) -> np.ndarray | None:
    """A hint per unit (items, then groups): a group takes its leftmost member's."""
    if order_hint is None:
        return None
    hint = np.asarray(order_hint, dtype=np.float64).reshape(-1)
    out = np.concatenate([hint, np.full(root, np.nan)])
    level = item_level.copy()
    value = hint.copy()
    while True:
        inside = (level != root) & (level >= 0)
        if not inside.any():
            break
        groups = level[inside]
        np.fmin.at(out, n + groups, value[inside])
        level = np.where(inside, up[np.where(inside, level, root)], -1)
        level[level == root] = -1
    return out


def _level_hints(hints: np.ndarray, units: np.ndarray, n: int) -> np.ndarray:
    out = np.full(len(units), np.nan)
    real = units >= 0
    out[real] = hints[units[real]]
    return out
