"""Structural signatures of nodes: 64-bit labels refined over their neighbours (Weisfeiler-Lehman).

A node's label at level k+1 mixes its label at level k with its producers' labels (per input
slot, with the producer's output slot) and its consumers' labels (a multiset, with the slot each
reads it at). Nodes whose level-k labels are equal look alike k steps around them. Sums of mixed
values stand for multisets, so the whole refinement is a few numpy passes over the input entries,
whatever the graph's size; uint64 arithmetic wraps, which is what a hash wants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from xocview.model.analyses.diff.sides import Side

__all__ = ["combine", "mix", "refine", "segment_sums"]

_U = np.uint64
_M1, _M2 = _U(0xBF58476D1CE4E5B9), _U(0x94D049BB133111EB)
_GOLDEN = _U(0x9E3779B97F4A7C15)
_SLOT, _OUT_SLOT, _UP, _DOWN = _U(0x632BE59BD9B4E019), _U(0x85EBCA77C2B2AE63), _U(7), _U(13)


def mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: every input bit moves about half of the output bits."""
    with np.errstate(over="ignore"):
        x = x.astype(_U, copy=True)
        x ^= x >> _U(30)
        x *= _M1
        x ^= x >> _U(27)
        x *= _M2
        x ^= x >> _U(31)
    return x


def combine(*parts: np.ndarray | int) -> np.ndarray:
    """One label from several (order matters): each part mixed into the running value."""
    out = np.zeros(1, dtype=_U)
    with np.errstate(over="ignore"):
        for p in parts:
            out = mix(out * _GOLDEN + np.asarray(p).astype(_U))
    return out


def segment_sums(values: np.ndarray, ptr: np.ndarray) -> np.ndarray:
    """Sums (mod 2**64) of ``values`` over the segments ``ptr[i]:ptr[i + 1]`` (empty ones 0)."""
    cum = np.zeros(len(values) + 1, dtype=_U)
    with np.errstate(over="ignore"):
        np.cumsum(values, dtype=_U, out=cum[1:])
        return cum[ptr[1:]] - cum[ptr[:-1]]


def refine(
    side: Side,
    own: np.ndarray,
    levels: int,
    near: np.ndarray | None = None,
    tensor_label: np.ndarray | None = None,
) -> list[np.ndarray]:
    """Labels of levels 0..``levels``: level 0 is ``own``; each next level adds one step of
    neighbours. ``near`` (default: the previous level) is what a node shows its neighbours;
    producer-less inputs (graph inputs, weights) show ``tensor_label`` (default: kind, dtype
    and shape)."""
    out = [own.astype(_U)]
    e = side.entries
    t_label = side.tensor_label if tensor_label is None else tensor_label.astype(_U)
    with np.errstate(over="ignore"):
        slot_mark = e.key_slot.astype(_U) * _SLOT + e.prod_slot.astype(_U) * _OUT_SLOT
        has_prod = e.producer >= 0
        for _ in range(levels):
            h = out[-1]
            shown = h if near is None else near
            seen = np.where(has_prod, shown[np.maximum(e.producer, 0)], t_label[e.tensor])
            up = segment_sums(mix(seen + slot_mark), side.in_ptr)
            down_vals = mix(shown[e.owner] + slot_mark + _DOWN)[e.by_producer]
            down = segment_sums(down_vals, side.down_ptr)
            out.append(mix(mix(h + _UP) ^ mix(up + _SLOT) ^ mix(down * _M1 + _OUT_SLOT)))
    return out
