"""The edges of a nested layout: the pieces an edge is cut into at group borders (one per
level it crosses) and the polyline joined from their routes once every level is placed."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xocview.layout.nested_frames import Placed
from xocview.layout.pipeline import LayoutResult

__all__ = ["Level", "Stale", "join", "path_levels", "plan"]

_AROUND = 8.0  # how far a path around a group box keeps from it


class Stale(Exception):
    """A level kept from the previous layout was asked for a unit or piece it lacks: what
    changed reaches further than the update assumed, so the caller lays out everything."""


@dataclass
class Level:
    """One group's own layout problem: its units (items and sub-groups) and ports.

    Units are stable ids (an item's key; a group's ``item_space + frame key``), so that a level
    whose problem did not change is kept, as it is, by the next layout (``frozen``).
    """

    units: list[int] = field(default_factory=list)  # stable unit ids; -1 for a port
    local: dict[tuple[str, int], int] = field(default_factory=dict)  # ("u"/"in"/"out", key)
    src: list[int] = field(default_factory=list)
    dst: list[int] = field(default_factory=list)
    pieces: dict[tuple[int, int, int], int] = field(default_factory=dict)  # -> local edge
    frozen: bool = False  # kept from a previous layout: nothing may be added
    result: LayoutResult | None = field(default=None, repr=False)  # its layout, once made
    placed: Placed | None = field(default=None, repr=False)  # where its units sit in it

    def node(self, kind: str, key: int) -> int:
        k = self.local.get((kind, key))
        if k is None:
            if self.frozen:
                raise Stale
            k = self.local[(kind, key)] = len(self.local)
            self.units.append(key if kind == "u" else -1)
        return k

    def edge(self, a: int, b: int, via: int) -> int:
        """The local edge a -> b for outside source ``via`` (shared by its fan-out)."""
        e = self.pieces.get((a, b, via))
        if e is None:
            if self.frozen:
                raise Stale
            e = self.pieces[(a, b, via)] = len(self.src)
            self.src.append(a)
            self.dst.append(b)
        return e


def plan(
    uu: int,
    vv: int,
    n: int,
    item_level: np.ndarray,
    up: np.ndarray,
    depth: np.ndarray,
    levels: dict[int, Level],
) -> list[tuple[int, int, int]]:
    """The pieces of the edge from unit ``uu`` to unit ``vv``: (level, local edge, side).

    Units below ``n`` are items, found in ``item_level``; unit ``n + f`` is the group whose
    level is ``f`` (its parent level is ``up[f]``).
    """

    def level_of(u: int) -> int:
        return int(item_level[u]) if u < n else int(up[u - n])

    a, b = level_of(uu), level_of(vv)
    if a == b and uu != vv:  # both ends in one level (most edges): one piece there
        lv = levels[a]
        return [(a, lv.edge(lv.local[("u", uu)], lv.local[("u", vv)], uu), 0)]
    a_side: list[int] = []
    b_side: list[int] = []
    while depth[a] > depth[b]:
        a_side.append(a)
        a = int(up[a])
    while depth[b] > depth[a]:
        b_side.append(b)
        b = int(up[b])
    while a != b:
        a_side.append(a)
        b_side.append(b)
        a, b = int(up[a]), int(up[b])
    common = a
    if uu == vv:  # a self-loop, drawn by the flat layout
        lv = levels[common]
        k = lv.node("u", uu)
        return [(common, lv.edge(k, k, uu), 0)]
    pieces: list[tuple[int, int, int]] = []
    cur = uu
    for lvl in a_side:  # inside the source's groups: down to their bottom ports
        lv = levels[lvl]
        pieces.append((lvl, lv.edge(lv.node("u", cur), lv.node("out", uu), uu), -1))
        cur = n + lvl
    across = cur
    target = n + b_side[-1] if b_side else vv
    if across == target or (uu >= n and target == uu):
        return []  # an edge within one box's own frame: nothing to draw between boxes
    lv = levels[common]
    pieces.append((common, lv.edge(lv.node("u", across), lv.node("u", target), uu), 0))
    for j in range(len(b_side) - 1, -1, -1):  # inside the target's groups: from their top ports
        lvl = b_side[j]
        lv = levels[lvl]
        inner = n + b_side[j - 1] if j > 0 else vv
        pieces.append((lvl, lv.edge(lv.node("in", uu), lv.node("u", inner), uu), 1))
    return pieces


def path_levels(
    uu: int, vv: int, n: int, item_level: np.ndarray, up: np.ndarray, depth: np.ndarray
) -> list[int]:
    """Every level the edge from unit ``uu`` to unit ``vv`` has a piece in (or may have)."""
    a = int(item_level[uu]) if uu < n else int(up[uu - n])
    b = int(item_level[vv]) if vv < n else int(up[vv - n])
    out = [a, b]
    while depth[a] > depth[b]:
        a = int(up[a])
        out.append(a)
    while depth[b] > depth[a]:
        b = int(up[b])
        out.append(b)
    while a != b:
        a, b = int(up[a]), int(up[b])
        out += [a, b]
    return out


def join(
    plan: list[tuple[int, int, int]],
    levels: dict[int, Level],
    origin: np.ndarray,
    top: np.ndarray,
    box_h: np.ndarray,
    head_span: np.ndarray,
    left: np.ndarray,
    box_w: np.ndarray,
) -> np.ndarray:
    """One polyline from the pieces: each leaving piece runs on to its group's bottom border,
    each entering piece starts on its group's top border, and neighbours meet there. An
    entry that would cross a header box comes in beside it and turns under it."""
    if len(plan) == 1 and plan[0][2] == 0:  # one piece within one level: moved there
        lvl, e, _ = plan[0]
        return _points(levels[lvl], e) + origin[lvl]
    parts = []
    for lvl, e, side in plan:
        pts = _points(levels[lvl], e) + origin[lvl]
        if side < 0:
            pts = np.vstack([pts, [pts[-1, 0], top[lvl] + box_h[lvl]]])
        elif side > 0:
            lo, hi = head_span[lvl]
            px, py = pts[0]
            if lo < px < hi:  # come in right of the title, then across under it
                pts = np.vstack([[hi, top[lvl]], [hi, py], pts])
            else:
                pts = np.vstack([[px, top[lvl]], pts])
        parts.append(pts.copy())
    for k in range(len(parts) - 1):
        if plan[k][2] < 0:  # leaving group g through its bottom
            g, exit_ = plan[k][0], parts[k][-1]
            nxt = parts[k + 1]
            if nxt[0, 1] < exit_[1] - 1e-6:  # ... toward a box above it: around its side
                around_x = _beside(left[g], box_w[g], nxt[0, 0])
                bottom = exit_[1] + _AROUND
                parts[k + 1] = np.vstack(
                    [
                        exit_,
                        [exit_[0], bottom],
                        [around_x, bottom],
                        [around_x, top[g] - _AROUND],
                        nxt[1:],
                    ]
                )
            else:
                nxt[0] = exit_
        if plan[k + 1][2] > 0:  # entering group g through its top
            g, entry = plan[k + 1][0], parts[k + 1][0]
            cur = parts[k]
            if cur[-1, 1] > entry[1] + 1e-6:  # ... from a box below it: around its side
                around_x = _beside(left[g], box_w[g], cur[-1, 0])
                parts[k] = np.vstack(
                    [
                        cur[:-1],
                        [cur[-1, 0], top[g] + box_h[g] + _AROUND],
                        [around_x, top[g] + box_h[g] + _AROUND],
                        [around_x, top[g] - _AROUND],
                        [entry[0], top[g] - _AROUND],
                        entry,
                    ]
                )
            else:
                cur[-1] = entry
    return np.vstack([parts[0]] + [p[1:] for p in parts[1:]])


def _points(lv: Level, e: int) -> np.ndarray:
    assert lv.result is not None, "a level is laid out before its edges are joined"
    return lv.result.points[e]


def _beside(left: float, width: float, toward: float) -> float:
    """x of a path around a group box, on the side nearer ``toward``."""
    return left - _AROUND if toward < left + width / 2 else left + width + _AROUND
