"""The frames of a nested layout: a group's box from its own layout, and every box placed
top-down inside its parent's (a frame is a title band, then its content, padded)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from xocview.layout.pipeline import LayoutResult

__all__ = [
    "BELOW_HEAD",
    "FRAME_PAD",
    "HEAD_GAP",
    "TITLE_BAND",
    "Gathered",
    "Placed",
    "depths",
    "frame_box",
    "gather",
    "place",
]

_I = np.int64
FRAME_PAD = 14.0  # between a frame's border and its content (sides and bottom)
TITLE_BAND = 22.0  # the band for a frame's title, above its content
HEAD_GAP = 12.0  # between a frame's title and its header box
BELOW_HEAD = 28.0  # between a header box and the frame's content: its edges show


@dataclass(frozen=True)
class Placed:
    """Where one level's sub-groups (by level id) and items (by key) sit in its layout."""

    frames: np.ndarray
    fx: np.ndarray
    fy: np.ndarray
    items: np.ndarray
    ix: np.ndarray
    iy: np.ndarray
    rank: np.ndarray

    @staticmethod
    def of(units: np.ndarray, res: LayoutResult, item_space: int) -> Placed:
        group = units >= item_space
        item = (units >= 0) & ~group
        return Placed(
            units[group] - item_space,
            res.x[group],
            res.y[group],
            units[item],
            res.x[item],
            res.y[item],
            res.rank[item],
        )


@dataclass(frozen=True)
class Gathered:
    """Every level's ``Placed``, concatenated once per layout, with the level each row is in."""

    holder: np.ndarray  # per sub-group row: the level that holds it
    frames: np.ndarray
    fx: np.ndarray
    fy: np.ndarray
    item_level: np.ndarray  # per item row: its level
    items: np.ndarray
    ix: np.ndarray
    iy: np.ndarray
    rank: np.ndarray


def gather(levels: Iterable[int], placed: Iterable[Placed]) -> Gathered:
    lv = np.fromiter(levels, dtype=_I)
    parts = list(placed)
    if not parts:
        empty, nothing = np.zeros(0, dtype=_I), np.zeros(0)
        return Gathered(empty, empty, nothing, nothing, empty, empty, nothing, nothing, empty)

    def cat(name: str) -> np.ndarray:
        return np.concatenate([getattr(p, name) for p in parts])

    n_frames = np.fromiter((len(p.frames) for p in parts), dtype=_I, count=len(parts))
    n_items = np.fromiter((len(p.items) for p in parts), dtype=_I, count=len(parts))
    return Gathered(
        np.repeat(lv, n_frames), cat("frames"), cat("fx"), cat("fy"),
        np.repeat(lv, n_items), cat("items"), cat("ix"), cat("iy"), cat("rank"),
    )  # fmt: skip


def frame_box(
    res: LayoutResult, title: float, band: float, head: float, header: bool, lr: bool
) -> tuple[float, float, float, float]:
    """A group's box (width, height) and its content's offset in it (dx, dy), from its own
    layout, the width its title needs, the band across its top and its header box's width."""
    seen = max(title, head)  # what the title and header need
    if not lr and header:  # the header stands right of the title
        seen = title + HEAD_GAP + head
    if lr:  # laid out top-down, seen turned: the band runs along the layout's left
        inner = max(res.height, seen)
        return (
            band + res.width + FRAME_PAD,
            inner + 2 * FRAME_PAD,
            band,
            (FRAME_PAD + (inner - res.height) / 2),
        )
    inner = max(res.width, seen)
    return (
        inner + 2 * FRAME_PAD,
        band + res.height + FRAME_PAD,
        (FRAME_PAD + (inner - res.width) / 2),
        band,
    )


def place(g: Gathered, depth: np.ndarray, box: np.ndarray) -> tuple[np.ndarray, ...]:
    """Each level's content origin, and each group box's left and top, placed top-down
    (``box``: per level, width, height and the content's offset)."""
    origin = np.zeros((len(box), 2))
    left = np.zeros(len(box))
    top = np.zeros(len(box))
    d = depth[g.frames]
    for level_depth in np.unique(d).tolist():  # parents before children
        sel = d == level_depth
        f, par = g.frames[sel], g.holder[sel]
        left[f] = origin[par, 0] + g.fx[sel] - box[f, 0] / 2
        top[f] = origin[par, 1] + g.fy[sel] - box[f, 1] / 2
        origin[f, 0] = left[f] + box[f, 2]
        origin[f, 1] = top[f] + box[f, 3]
    return origin, left, top


def depths(up: np.ndarray, root: int) -> np.ndarray:
    """Nesting depth of every level (the root 0); a cycle in ``parent`` raises ValueError."""
    depth = np.zeros(len(up), dtype=_I)
    at = up.copy()  # each level's ancestor, one step further up per round
    at[root] = -1
    for _ in range(len(up)):
        live = np.flatnonzero(at >= 0)
        if not len(live):
            return depth
        depth[live] += 1
        at[live] = up[at[live]]
    raise ValueError("group parents form a cycle")
