"""What a nested layout keeps for the next one, and which levels a change reaches.

Expanding or collapsing one group changes the problems of few levels: the group's own, its
ancestors' (a box grew or shrank) and those of the groups its crossing edges reach (their
ports). Every other level keeps its pieces, its layout and the routes of the edges that lie
within it, which only move with the level's origin. Items, groups and edges are named by
stable keys that the caller gives (a node's position in its graph, say), so that one layout
can be compared with the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from xocview.layout.nested_edges import Level, path_levels
from xocview.layout.pipeline import LayoutResult
from xocview.layout.polylines import Polylines

__all__ = [
    "Changes",
    "NestKeys",
    "NestedState",
    "Snapshot",
    "changes",
    "edge_keys",
    "snapshot",
    "totals",
]

_I = np.int64
_MAX_PARALLEL = 64  # edges between one pair of items that keys tell apart


@dataclass(frozen=True)
class NestKeys:
    """Stable names: ``item[i] < item_space`` for item i, ``frame[c] < frame_space`` for group c."""

    item: np.ndarray
    frame: np.ndarray
    item_space: int
    frame_space: int

    @staticmethod
    def plain(num_items: int, num_frames: int) -> NestKeys:
        return NestKeys(
            np.arange(num_items, dtype=_I), np.arange(num_frames, dtype=_I), num_items, num_frames
        )

    def check(self, num_items: int, num_frames: int) -> None:
        for name, arr, count, space in (
            ("item", self.item, num_items, self.item_space),
            ("frame", self.frame, num_frames, self.frame_space),
        ):
            if len(arr) != count:
                raise ValueError(f"{name} keys: {count} needed, got {len(arr)}")
            if count and (arr.min() < 0 or arr.max() >= space):
                raise ValueError(f"{name} keys must lie in [0, {space})")
            if count and np.bincount(arr, minlength=space).max() > 1:
                raise ValueError(f"{name} keys must be unique")


@dataclass
class Snapshot:
    """A layout's inputs by key: what decides each level's problem."""

    settings: tuple[object, ...]
    item_space: int
    frame_space: int
    level: np.ndarray  # per item key: its level (-2 when not drawn)
    unit: np.ndarray  # per item key: its unit (itself, or the group it heads)
    w: np.ndarray
    h: np.ndarray
    frame_up: np.ndarray  # per frame key: its parent level (-2 when not drawn)
    frame_box: np.ndarray  # per frame key: title width, band, header width
    edge_key: np.ndarray | None  # per edge: unique key, None when keys cannot tell edges apart
    _order: np.ndarray | None = field(default=None, repr=False)

    def edge_order(self) -> np.ndarray:
        """The edges in the order of their keys, sorted once (the next layout asks)."""
        if self._order is None:
            assert self.edge_key is not None
            self._order = np.argsort(self.edge_key, kind="stable")
        return self._order

    def compatible(self, other: Snapshot) -> bool:
        return (
            self.settings == other.settings
            and self.item_space == other.item_space
            and self.frame_space == other.frame_space
            and self.edge_key is not None
            and other.edge_key is not None
        )


@dataclass
class NestedState:
    """One nested layout, as the next layout of the same graph can reuse it."""

    now: Snapshot
    up: np.ndarray  # per level: its parent level
    levels: dict[int, Level]  # each with its layout (``result``)
    plans: list[list[tuple[int, int, int]]]
    plan_ptr: np.ndarray  # the levels of edge e's pieces: plan_levels[plan_ptr[e]:plan_ptr[e+1]]
    plan_levels: np.ndarray
    lca: np.ndarray  # per edge: the level it crosses between groups in (-1: none)
    lines: Polylines  # top-down coordinates, before any turn to left-right
    box: np.ndarray  # per level: box width, height, content dx, dy
    origin: np.ndarray  # per level: its content's origin
    crossings: int = 0
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Changes:
    dirty: np.ndarray  # per level: lay out again
    replan: np.ndarray  # per edge: plan and route again
    previous_edge: np.ndarray  # per edge: the same edge in the previous layout, or -1


def edge_keys(src_key: np.ndarray, dst_key: np.ndarray, item_space: int) -> np.ndarray | None:
    """A key per edge from its ends' keys; parallel edges told apart by their order."""
    if item_space and item_space * item_space * _MAX_PARALLEL >= 2**62:
        return None
    base = src_key.astype(_I) * item_space + dst_key.astype(_I)
    order = np.argsort(base, kind="stable")
    ordered = base[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(base) else order
    run = np.repeat(starts, np.diff(np.r_[starts, len(base)]))
    occ = np.empty(len(base), dtype=_I)
    occ[order] = np.arange(len(base)) - run
    if len(occ) and occ.max() >= _MAX_PARALLEL:
        return None
    return base * _MAX_PARALLEL + occ


def changes(
    prev: NestedState,
    now: Snapshot,
    up: np.ndarray,
    depth: np.ndarray,
    uu: np.ndarray,
    vv: np.ndarray,
    src_key: np.ndarray,
    dst_key: np.ndarray,
) -> Changes:
    """The levels whose problems differ from ``prev``'s (with all their ancestors) and the
    edges to plan again: new ones, those whose ends changed and those through a dirty level."""
    before = prev.now
    assert now.edge_key is not None and before.edge_key is not None
    dirty = np.zeros(len(up), dtype=bool)
    changed = (
        (now.level != before.level)
        | (now.unit != before.unit)
        | (now.w != before.w)
        | (now.h != before.h)
    )
    for lv in (now.level[changed], before.level[changed]):
        dirty[lv[lv >= 0]] = True
    moved = (now.frame_up != before.frame_up) | (now.frame_box != before.frame_box).any(axis=1)
    gone_or_new = np.flatnonzero(moved)
    dirty[gone_or_new] = True
    for lv in (now.frame_up[gone_or_new], before.frame_up[gone_or_new]):
        dirty[lv[lv >= 0]] = True

    old_keys = before.edge_key
    order = before.edge_order()
    pos = np.searchsorted(old_keys, now.edge_key, sorter=order)
    pos = np.minimum(pos, max(len(old_keys) - 1, 0))
    found = old_keys[order[pos]] == now.edge_key if len(old_keys) else np.zeros(len(uu), dtype=bool)
    incident = changed[src_key] | changed[dst_key]
    keep = found & ~incident
    previous_edge = np.where(keep, order[pos] if len(old_keys) else -1, -1)
    kept_old = np.zeros(len(old_keys), dtype=bool)
    kept_old[previous_edge[keep]] = True
    counts = np.diff(prev.plan_ptr)
    dirty[prev.plan_levels[np.repeat(~kept_old, counts)]] = True
    fresh = ~keep
    n = now.item_space
    item_level = np.maximum(now.level, 0)
    for e in np.flatnonzero(fresh).tolist():
        dirty[path_levels(int(uu[e]), int(vv[e]), n, item_level, up, depth)] = True

    frontier = np.flatnonzero(dirty)
    while len(frontier):  # every ancestor of a dirty level: a box inside it changed
        p = up[frontier]
        p = p[p >= 0]
        p = np.unique(p[~dirty[p]])
        dirty[p] = True
        frontier = p
    through = np.cumsum(np.r_[0, dirty[prev.plan_levels]])
    touches = through[prev.plan_ptr[1:]] > through[prev.plan_ptr[:-1]]
    replan = fresh.copy()
    replan[keep] = touches[previous_edge[keep]]
    return Changes(dirty, replan, previous_edge)


def snapshot(
    settings: tuple[object, ...],
    keys: NestKeys,
    item_level: np.ndarray,
    unit: np.ndarray,
    w: np.ndarray,
    h: np.ndarray,
    up: np.ndarray,
    band: np.ndarray,
    head: np.ndarray,
    tw: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
) -> Snapshot:
    """The layout's inputs, arranged by key (per item: level, unit, size; per frame: parent,
    title width, band, header width)."""
    ks, fs = keys.item_space, keys.frame_space
    ik, fk = keys.item, keys.frame
    level = np.full(ks, -2, dtype=_I)
    level[ik] = item_level
    unit_k = np.full(ks, -1, dtype=_I)
    unit_k[ik] = unit
    w_k = np.zeros(ks)
    w_k[ik] = w
    h_k = np.zeros(ks)
    h_k[ik] = h
    frame_up = np.full(fs + 1, -2, dtype=_I)
    frame_up[fk] = up[fk]
    frame_box = np.zeros((fs + 1, 4))
    frame_box[fk, 0] = tw
    frame_box[fk, 1] = band
    frame_box[fk, 2] = head
    frame_box[fk, 3] = head > 0
    return Snapshot(
        settings, ks, fs, level, unit_k, w_k, h_k, frame_up, frame_box,
        edge_keys(ik[src], ik[dst], ks),
    )  # fmt: skip


def totals(
    previous: NestedState | None, levels: dict[int, Level], made: list[int]
) -> tuple[int, dict[str, float]]:
    """Crossings and phase times over every level: the previous totals, less the levels laid
    out again (``made``) or gone, plus the ``made`` ones."""
    crossings = 0
    timings: dict[str, float] = {}

    def add(result: LayoutResult | None, sign: int) -> None:
        nonlocal crossings
        assert result is not None
        crossings += sign * result.crossings
        for phase, t in result.timings.items():
            timings[phase] = timings.get(phase, 0.0) + sign * t

    if previous is None:
        for lv in levels.values():
            add(lv.result, 1)
        return crossings, timings
    crossings, timings = previous.crossings, dict(previous.timings)
    for lvl, lv in previous.levels.items():
        if levels.get(lvl) is not lv:  # laid out again, or gone
            add(lv.result, -1)
    for lvl in made:
        add(levels[lvl].result, 1)
    return crossings, timings
