"""Compiled window sweeps for the pooling kernels, worked out once per input shape.

A sweep reduces every window of a contiguous input by whole-buffer ufunc calls on work
buffers kept per thread:

- along an axis, the windows are reduced by one ufunc call per kernel tap on the whole
  flattened tensor shifted by the tap's offset, so that output position f combines the
  input at f + q for each tap offset q; positions whose window leaves the axis (the padded
  borders) come out wrong in that sweep and are redone from their in-range taps, and no
  padded copy is made;
- a strided last axis is first split into its phases (every stride-th item; for stride 2 by
  a contiguous cast of item pairs, the even and odd columns), so that it is swept at the
  output's resolution and the other axes see a fraction of the data; those are swept at full
  resolution and sampled once at the end, each sampled row copied as one item.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from xocview.executor.ops.scratch import ALIGN, scratch
from xocview.executor.ops.spatial import Geometry, Index, dilated

__all__ = ["Step", "View", "sweep_program"]


# A compiled sweep: numpy calls with every slice worked out once per input shape, run on a
# list of buffers whose slot 0 is the input, flattened. A view is named by (slot, items,
# frame shape, index) and taken as buffer[:items].reshape(frame)[index].
View = tuple[int, int, tuple[int, ...], Index]
Step = tuple[Callable[..., None], tuple[Any, ...]]

# Two adjacent items viewed as one little-endian unsigned integer, and the integer of one
# item: casting the first to the second keeps the first item of every pair (its bytes are the
# low half on any host), a contiguous cast several times faster than a stride-2 copy.
_PAIR = {1: np.dtype("<u2"), 2: np.dtype("<u4"), 4: np.dtype("<u8")}
_ITEM = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4")}

# From this many items on, a sweep of three or more taps along a leading axis accumulates in
# place and redoes its border rows from the taps: one buffer fewer to stream through the
# caches matters more than those rows. Smaller sweeps, and sweeps along the last axis (whose
# borders are columns, an item per row), keep the first two taps' buffer to copy borders from.
_IN_PLACE = 1 << 18


def _view(bufs: list[Any], view: View) -> np.ndarray:
    slot, items, frame, index = view
    return bufs[slot][:items].reshape(frame)[index]


def _new(bufs: list[Any], slot: int, items: int, dtype: np.dtype) -> None:
    bufs[slot] = np.empty(items, dtype)


def _carve(bufs: list[Any], size: int, places: list[tuple[int, int, int, np.dtype]]) -> None:
    """The work buffers, each (slot, byte offset, items, dtype) in ``size`` bytes of the
    per-thread kernel scratch (never returned)."""
    buf, base = scratch(size)
    for slot, at, items, dtype in places:
        bufs[slot] = buf[base + at : base + at + items * dtype.itemsize].view(dtype)


def _alias(bufs: list[Any], slot: int, dead: int) -> None:
    bufs[slot] = bufs[dead]


def _apply(
    bufs: list[Any], op: np.ufunc, out: int, at: slice, a: int, a_at: slice, b: int, b_at: slice
) -> None:
    op(bufs[a][a_at], bufs[b][b_at], out=bufs[out][at])


def _copy_flat(bufs: list[Any], out: int, at: slice, src: int, src_at: slice) -> None:
    bufs[out][at] = bufs[src][src_at]


def _fill(bufs: list[Any], out: int, at: slice, value: float | int) -> None:
    bufs[out][at] = value


def _fix(
    bufs: list[Any], op: np.ufunc, target: View, sources: list[View], value: float | int
) -> None:
    """One border position: the reduction of its in-range taps (``value`` when there are none)."""
    out = _view(bufs, target)
    if not sources:
        out[...] = value
    elif len(sources) == 1:
        _copy_rows(out, _view(bufs, sources[0]))
    else:
        op(_view(bufs, sources[0]), _view(bufs, sources[1]), out=out)
        for source in sources[2:]:
            op(out, _view(bufs, source), out=out)


def _phase(
    bufs: list[Any], out: int, src: int, first: int, step: int, frame: tuple[int, int, int]
) -> None:
    """Into buffer ``out``: positions first, first + step, ... along the middle axis of the
    contiguous (outer, n, inner) buffer ``src``, n a multiple of step.

    A position is a run of ``inner`` items, copied as one item of a void dtype (numpy copies
    short strided rows several times slower); a single item with step 2 is picked by the
    cast of item pairs, the odd phase's last item (its pair would run past the end) copied.
    """
    outer, n, inner = frame
    flat = bufs[src][: outer * n * inner]
    dest = bufs[out]
    size = flat.dtype.itemsize
    if inner > 1 or step != 2 or size not in _PAIR:
        row = np.dtype((np.void, inner * size))
        np.copyto(dest.view(row), flat.view(row)[first::step])
        return
    pair, item = _PAIR[size], _ITEM[size]
    half = dest.view(item)
    if first == 0:
        np.copyto(half, flat.view(pair), casting="unsafe")
    else:
        np.copyto(half[:-1], flat[1:-1].view(pair), casting="unsafe")
        half[-1:] = flat[-1:].view(item)


def _copy_rows(out: np.ndarray, view: np.ndarray) -> None:
    """out[...] = view; rows that are contiguous runs in both are copied as one item each (a
    void dtype of the row's bytes), two to three times faster than numpy's copy of short
    rows."""
    if view.ndim > 1 and view.size and view.strides[-1] == out.strides[-1] == view.itemsize:
        row = np.dtype((np.void, view.shape[-1] * view.itemsize))
        np.copyto(out.view(row), view.view(row))
    else:
        np.copyto(out, view)


def _compact(view: np.ndarray) -> np.ndarray:
    """A new contiguous copy of a view."""
    out = np.empty(view.shape, view.dtype)
    _copy_rows(out, view)
    return out


class _Program:
    """Steps that reduce every window of one input shape; calling it on a contiguous input
    gives the result as a new contiguous array. ``whole``: the result is all of its own
    (freshly allocated) buffer; otherwise it is copied out of the work buffers."""

    def __init__(self, steps: list[Step], slots: int, result: View, whole: bool) -> None:
        self.steps, self.slots, self.result, self.whole = steps, slots, result, whole

    def __call__(self, x: np.ndarray) -> np.ndarray:
        bufs: list[Any] = [None] * self.slots
        bufs[0] = x.reshape(-1)
        for step, args in self.steps:
            step(bufs, *args)
        y = _view(bufs, self.result)
        return y if self.whole else _compact(y)


class _Builder:
    """Collects a program's steps. Buffers are numbered slots; one released as dead is handed
    out again for the next buffer of its size, so that fewer distinct buffers pass through
    the caches."""

    def __init__(self, dtype: np.dtype, op: np.ufunc, identity: float | int) -> None:
        self.dtype, self.op, self.identity = dtype, op, identity
        self.steps: list[Step] = []
        self.slots = 1
        self.sizes: dict[int, int] = {}
        self.free: list[int] = []
        self.made: dict[int, int] = {}  # slot -> index of the step that creates it

    def new(self, items: int) -> int:
        """A slot for a buffer of ``items`` (a dead one of that size if there is one)."""
        slot = self.slots
        self.slots += 1
        self.sizes[slot] = items
        dead = next((old for old in self.free if self.sizes[old] == items), None)
        self.made[slot] = len(self.steps)
        if dead is None:
            self.steps.append((_new, (slot, items, self.dtype)))
        else:
            self.free.remove(dead)
            self.steps.append((_alias, (slot, dead)))
        return slot

    def release(self, *slots: int) -> None:
        """Buffers no later step reads (never the input, slot 0)."""
        self.free.extend(s for s in set(slots) if s in self.sizes and s not in self.free)

    def program(self, result: View, whole: bool) -> _Program:
        """The steps with every buffer but a whole result carved out of the scratch bytes."""
        slot = result[0]
        while whole and self.steps[self.made[slot]][0] is _alias:  # the result's own memory
            slot = self.steps[self.made[slot]][1][1]
        steps, places, at = [], [], 0
        for step, args in self.steps:
            if step is _new and not (whole and args[0] == slot):
                places.append((args[0], at, args[1], args[2]))
                at += -(-args[1] * args[2].itemsize // ALIGN) * ALIGN
            else:
                steps.append((step, args))
        if places:
            steps.insert(0, (_carve, (at, places)))
        return _Program(steps, self.slots, result, whole)

    def sweep(self, taps: list[tuple[int, int]], shape: tuple[int, int, int], grid: range) -> int:
        """A new buffer with out[r, f, i] = op over taps (slot, q) of slot[r, f + q, i], exact
        at every f in ``grid``.

        Each tap is one ufunc call over the whole buffer shifted by q * inner; windows that
        leave the axis are redone at the grid positions from their in-range taps, copied from
        the buffer of the first two taps when those are the two.
        """
        outer, m, inner = shape
        items = outer * m * inner
        order = sorted(taps, key=lambda tap: (abs(tap[1]), tap[1]))
        pair = None
        if len(order) > 2 and (items < _IN_PLACE or inner == 1):
            pair = self.new(items)
        offsets = [q for _, q in taps]
        inside = range(max(0, -min(offsets)), m - max(0, max(offsets)))
        left = len(range(grid.start, min(grid.stop, inside.start), grid.step))
        right = len(range(grid.start, min(grid.stop, max(inside.stop, inside.start)), grid.step))
        fixes = []
        for pos in [*grid[:left], *grid[max(left, right) :]]:
            sources = [(src, pos + q) for src, q in taps if 0 <= pos + q < m]
            if len(sources) == 2 and pair is not None:
                sources = self._from_pair(order, pair, sources)
            fixes.append((pos, sources))
        out = self.new(items)
        if pair is None:
            pair = out
        lo, hi = 0, items
        for _, q in order[:2]:
            lo, hi = max(lo, -q * inner), min(hi, items - q * inner)
        hi = max(hi, lo)

        def shifted(q: int) -> slice:
            return slice(lo + q * inner, hi + q * inner)

        if len(order) == 1:
            src, q = order[0]
            self.steps.append((_copy_flat, (out, slice(lo, hi), src, shifted(q))))
        else:
            (a, qa), (b, qb) = order[0], order[1]
            step = (self.op, pair, slice(lo, hi), a, shifted(qa), b, shifted(qb))
            self.steps.append((_apply, step))
            acc = pair
            for src, q in order[2:]:
                lo = max(lo, -q * inner)
                hi = max(lo, min(hi, items - q * inner))
                step = (self.op, out, slice(lo, hi), acc, slice(lo, hi), src, shifted(q))
                self.steps.append((_apply, step))
                acc = out
        if lo:
            self.steps.append((_fill, (out, slice(0, lo), self.identity)))
        if hi < items:
            self.steps.append((_fill, (out, slice(hi, items), self.identity)))
        # (outer, inner) views; 1-D for columns, which numpy would walk a row at a time
        tail = (0,) if inner == 1 else ()
        for pos, sources in fixes:
            views = [(slot, items, shape, (slice(None), at, *tail)) for slot, at in sources]
            target = (out, items, shape, (slice(None), pos, *tail))
            self.steps.append((_fix, (self.op, target, views, self.identity)))
        if pair != out:
            self.release(pair)
        return out

    @staticmethod
    def _from_pair(
        order: list[tuple[int, int]], pair: int, sources: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """Two taps' positions as one position of the pair buffer when it holds the two."""
        (a, qa), (b, qb) = order[0], order[1]
        for (s, at), (t, bt) in (sources, sources[::-1]):
            if s == a and t == b and at - qa == bt - qb:
                return [(pair, at - qa)]
        return sources


@functools.lru_cache(maxsize=256)
def sweep_program(
    shape: tuple[int, ...], dtype: np.dtype, g: Geometry, op: np.ufunc, identity: float | int
) -> _Program | None:
    """The sweeps that reduce every window of a contiguous input of ``shape``, or None when
    a window is not anchored inside the input (output o of an axis is kept at position
    o * stride, so the begin padding may not exceed the window span minus the end padding,
    as with every pad smaller than the kernel) or the input or output is empty.

    Axes go last to first. A last axis whose stride divides its length is first split into
    its phases (every stride-th item, while the input is one contiguous run), so that its
    sweep runs at the output's resolution and the other axes see 1/stride of the data. The
    other axes are swept at full resolution and sampled once at the end: splitting them too
    would cost a copy per phase where the sampling costs one.
    """
    rank = len(g.out)
    lead = shape[: len(shape) - rank]
    frame = list(shape[len(shape) - rank :])
    items = math.prod(shape)
    if items == 0 or 0 in g.out:
        return None
    for n, k, d, s, b, e, o in zip(
        frame, g.kernel, g.dilations, g.strides, g.begin, g.end, g.out, strict=True
    ):
        if b > dilated(k, d) - 1 - e or (o - 1) * s > n - 1:
            return None
    build = _Builder(dtype, op, identity)
    cur = 0
    picks: list[slice] = [slice(None)] * rank
    for i in reversed(range(rank)):
        n, k, d, s, b, o = frame[i], g.kernel[i], g.dilations[i], g.strides[i], g.begin[i], g.out[i]
        inner = math.prod(frame[i + 1 :])
        axis = (items // (n * inner), n, inner)
        if i == rank - 1 and s > 1 and n % s == 0:
            where = [divmod(t * d - b, s) for t in range(k)]
            phases = {}
            for p in sorted({p for _, p in where}):
                phases[p] = build.new(items // s)
                build.steps.append((_phase, (phases[p], cur, p, s, axis)))
            build.release(cur)
            taps = [(phases[p], q) for q, p in where]
            frame[i] = n // s
            items //= s
            axis = (axis[0], frame[i], inner)
            if len(taps) == 1 and taps[0][1] == 0:
                cur = taps[0][0]
            else:
                cur = build.sweep(taps, axis, range(o))
                build.release(*phases.values())
            picks[i] = slice(0, o)
        else:
            if k > 1:
                taps = [(cur, t * d - b) for t in range(k)]
                done, cur = cur, build.sweep(taps, axis, range(0, o * s, s))
                build.release(done)
            picks[i] = slice(0, (o - 1) * s + 1, s)
    result = (cur, items, (*lead, *frame), (*(slice(None) for _ in lead), *picks))
    # Every position of the (phase-split) frame is an output: the buffer is the result.
    return build.program(result, cur != 0 and g.out == tuple(frame))
