"""MaxPool, AveragePool, LpPool and their global forms.

numpy runs a ufunc over one contiguous run several times faster than over a strided view
with short rows (it buffers every operand that is not one run), and in a network a fresh
work array costs a page fault per page. So a pooling is worked out once per input shape
(a network pools the same few shapes on every pass) into a program of whole-buffer calls on
work buffers kept per thread:

- along an axis, the windows are reduced by one ufunc call per kernel tap on the whole
  flattened tensor shifted by the tap's offset, so that output position f combines the
  input at f + q for each tap offset q; positions whose window leaves the axis (the padded
  borders) come out wrong in that sweep and are redone from their in-range taps, and no
  padded copy is made;
- a strided last axis is first split into its phases (every stride-th item; for stride 2 by
  a contiguous cast of item pairs), so that it is swept at the output's resolution and the
  other axes see a fraction of the data; those are swept at full resolution and sampled
  once at the end, each sampled row copied as one item;
- AveragePool divides by its per-window counts in runs of whole planes.

Maxima are exact; sums may round differently from onnxruntime's (it adds a window's items
in row order, here axis by axis).

MaxPool's Indices output, and pads that together reach the window's span (so that a window
may lie wholly in the padding), take the tap loops over a padded copy instead.
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.executor.ops.spatial import (
    Geometry,
    Index,
    dilated,
    geometry,
    pad_spatial,
    tap_slices,
)
from xocview.executor.registry import kernel

__all__ = [
    "average_pool",
    "global_average_pool",
    "global_lp_pool",
    "global_max_pool",
    "lp_pool",
    "max_pool",
]

Ints = Sequence[int] | None


def _geometry(
    x: np.ndarray,
    kernel_shape: Ints,
    strides: Ints,
    dilations: Ints,
    pads: Ints,
    auto_pad: str | bytes,
    ceil_mode: int,
) -> Geometry:
    """The pooling windows; raises ValueError when kernel_shape is missing or the wrong length."""
    if not kernel_shape or len(kernel_shape) != x.ndim - 2:
        raise ValueError(f"kernel_shape {kernel_shape} does not fit input of shape {x.shape}")
    return geometry(
        x.shape[2:],
        kernel_shape,
        strides=strides,
        dilations=dilations,
        pads=pads,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
    )


def _lowest(dtype: np.dtype) -> float | int:
    """The padding value that never wins a max."""
    return -np.inf if dtype.kind == "f" else int(np.iinfo(dtype).min)


# A prepared pooling, X -> Y, for one input shape and dtype and one set of attributes.
Run = Callable[[np.ndarray], np.ndarray]


def _prepared(
    kind: str,
    x: np.ndarray,
    kernel_shape: Ints,
    strides: Ints,
    dilations: Ints,
    pads: Ints,
    auto_pad: str | bytes,
    ceil_mode: int,
    extra: float = 0,
) -> Run:
    """The prepared ``kind`` pooling ("max", "average" with count_include_pad ``extra``, "lp"
    with p ``extra``) for x; raises ValueError when kernel_shape is missing or the wrong
    length, or for attributes geometry() refuses."""
    if not kernel_shape or len(kernel_shape) != x.ndim - 2:
        raise ValueError(f"kernel_shape {kernel_shape} does not fit input of shape {x.shape}")
    return _prepare(
        kind,
        x.shape,
        x.dtype,
        tuple(kernel_shape),
        None if strides is None else tuple(strides),
        None if dilations is None else tuple(dilations),
        None if pads is None else tuple(pads),
        auto_pad,
        int(ceil_mode),
        extra,
    )


@functools.lru_cache(maxsize=512)
def _prepare(
    kind: str,
    shape: tuple[int, ...],
    dtype: np.dtype,
    kernel_shape: tuple[int, ...],
    strides: tuple[int, ...] | None,
    dilations: tuple[int, ...] | None,
    pads: tuple[int, ...] | None,
    auto_pad: str | bytes,
    ceil_mode: int,
    extra: float,
) -> Run:
    """_prepared's work, remembered: a network pools the same few shapes on every pass, and
    on small tensors the Python that sets a pooling up is a large part of its time."""
    g = geometry(
        shape[2:],
        kernel_shape,
        strides=strides,
        dilations=dilations,
        pads=pads,
        auto_pad=auto_pad,
        ceil_mode=ceil_mode,
    )
    if kind == "max":
        return _max_run(shape, dtype, g)
    if kind == "average":
        return _average_run(shape, dtype, g, bool(extra))
    return _lp_run(shape, dtype, g, extra)


def _whole(shape: tuple[int, ...], g: Geometry) -> bool:
    """Whether the only window is the whole unpadded spatial extent (a global pool)."""
    return (
        math.prod(shape) > 0
        and not g.padded
        and all(o == 1 for o in g.out)
        and g.kernel == shape[len(shape) - len(g.out) :]
        and all(d == 1 for d in g.dilations)
    )


def _windows_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, op: np.ufunc) -> Run:
    """Every window reduced by ``op`` (np.maximum or np.add, the padding never counting), as
    a fresh contiguous array."""
    identity = _lowest(dtype) if op is np.maximum else 0
    program = _program(shape, dtype, g, op, identity)
    if program is not None:
        return lambda x: program(np.ascontiguousarray(x))
    # the strided result of an axis of kernel 1 may be a view
    return lambda x: np.ascontiguousarray(_reduce_windows(pad_spatial(x, g, identity), g, op))


def _max_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry) -> Run:
    """The maximum of every window."""
    if not _whole(shape, g):
        return _windows_run(shape, dtype, g, np.maximum)
    lead = shape[: len(shape) - len(g.out)]

    def run(x: np.ndarray) -> np.ndarray:
        flat = np.ascontiguousarray(x).reshape(*lead, -1)
        return np.maximum.reduce(flat, axis=-1).reshape(lead + g.out)

    return run


def _average_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, include_pad: bool) -> Run:
    """Window sums over zero padding, divided by the per-window count in X's dtype."""
    if _whole(shape, g) and dtype in (np.float32, np.float64):
        sums = _whole_sums(shape, dtype, g)
    else:
        sums = _windows_run(shape, dtype, g, np.add)
    counts, tiled = _divisors(g, shape[len(shape) - len(g.out) :], include_pad, dtype)

    def run(x: np.ndarray) -> np.ndarray:
        y = sums(x)
        if tiled is None:
            return np.divide(y, counts, out=y)
        # Dividing by the (H, W) counts broadcast over N * C makes numpy buffer every
        # operand; contiguous runs of whole planes against the counts tiled as often are
        # several times faster.
        flat = y.reshape(-1)
        for start in range(0, flat.size, tiled.size):
            part = flat[start : start + tiled.size]
            np.divide(part, tiled[: part.size], out=part)
        return y

    return run


def _whole_sums(shape: tuple[int, ...], dtype: np.dtype, g: Geometry) -> Run:
    """Sums over the whole spatial extent as a product with ones: x * 1 is exact, so it is a
    plain sum, and BLAS sums rows of a few dozen items far faster than numpy's reduction."""
    lead = shape[: len(shape) - len(g.out)]
    ones = np.ones(math.prod(g.kernel), dtype)
    return lambda x: (np.ascontiguousarray(x).reshape(math.prod(lead), -1) @ ones).reshape(
        lead + g.out
    )


# The counts tiled over whole planes to about this many items, for the division in runs.
_RUN = 1 << 15


def _divisors(
    g: Geometry, spatial: tuple[int, ...], include_pad: bool, dtype: np.dtype
) -> tuple[np.ndarray | np.generic, np.ndarray | None]:
    """What the window sums are divided by: the counts (a scalar when they are all one
    number: the same quotients) and, for varying counts, the counts of several planes in a
    row."""
    if not (g.padded or include_pad):
        return dtype.type(math.prod(g.kernel)), None
    counts = _window_counts(g, spatial, include_pad).astype(dtype)
    if counts.size == 0 or (counts == counts.flat[0]).all():
        return (counts.flat[0] if counts.size else counts), None
    return counts, np.tile(counts.reshape(-1), max(1, _RUN // counts.size))


def _lp_run(shape: tuple[int, ...], dtype: np.dtype, g: Geometry, p: float) -> Run:
    """(sum over the window of |x|^p)^(1/p), zero padding, in X's dtype."""
    if p <= 0:  # zero padding raised to p is no longer zero: pad first, as the spec does
        return lambda x: _lp_padded(x, g, p)
    sums = _windows_run(shape, dtype, g, np.add)
    if p == 2:
        return lambda x: np.sqrt(y := sums(np.square(x)), out=y)
    power, root = dtype.type(p), dtype.type(1.0 / p)
    return lambda x: np.power(y := sums(np.power(np.abs(x), power)), root, out=y)


def _lp_padded(x: np.ndarray, g: Geometry, p: float) -> np.ndarray:
    xp = pad_spatial(x, g, 0)
    if p == 2:
        y = _reduce_windows(np.square(xp), g, np.add)
        return np.sqrt(y, out=y)
    y = _reduce_windows(np.power(np.abs(xp), xp.dtype.type(p)), g, np.add)
    return np.power(y, y.dtype.type(1.0 / p), out=y)


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

# Work buffers come from one buffer kept per thread between calls: a fresh large array costs a
# page fault per page on first touch, which inside a network (where freed memory goes back to
# the system) takes longer than the pooling itself. A program needing more gets fresh memory.
_SCRATCH_LIMIT = 1 << 26
_ALIGN = 64


class _Scratch(threading.local):
    buf: np.ndarray | None = None
    base = 0  # first byte of buf on an _ALIGN boundary


_SCRATCH = _Scratch()


def _scratch(size: int) -> tuple[np.ndarray, int]:
    """Bytes for a program's work buffers and the aligned offset they start at; valid until
    this thread's next pooling call, so never returned."""
    if size > _SCRATCH_LIMIT:
        fresh = np.empty(size + _ALIGN, np.uint8)
        return fresh, -fresh.ctypes.data % _ALIGN
    kept = _SCRATCH.buf
    if kept is None or kept.size < size + _ALIGN:
        kept = _SCRATCH.buf = np.empty(size + _ALIGN, np.uint8)
        _SCRATCH.base = -kept.ctypes.data % _ALIGN
    return kept, _SCRATCH.base


def _view(bufs: list[Any], view: View) -> np.ndarray:
    slot, items, frame, index = view
    return bufs[slot][:items].reshape(frame)[index]


def _new(bufs: list[Any], slot: int, items: int, dtype: np.dtype) -> None:
    bufs[slot] = np.empty(items, dtype)


def _carve(bufs: list[Any], size: int, places: list[tuple[int, int, int, np.dtype]]) -> None:
    """The work buffers, each (slot, byte offset, items, dtype) in ``size`` scratch bytes."""
    buf, base = _scratch(size)
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
                at += -(-args[1] * args[2].itemsize // _ALIGN) * _ALIGN
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
def _program(
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


def _reduce_windows(xp: np.ndarray, g: Geometry, op: np.ufunc) -> np.ndarray:
    """Combine every window with ``op`` one spatial axis at a time (max and sum separate).

    An axis of kernel k costs k strided in-place ufunc calls, so a 3x3 window needs 6 passes
    over shrinking arrays rather than 9. The result never shares memory with ``xp``.
    """
    rank = len(g.out)
    cur = xp
    for i in range(rank):
        k, d, s, o = g.kernel[i], g.dilations[i], g.strides[i], g.out[i]
        lead = (slice(None),) * (cur.ndim - rank + i)
        picks: list[Index] = [(*lead, slice(t * d, t * d + (o - 1) * s + 1, s)) for t in range(k)]
        taps = [cur[pick] for pick in picks]
        if k == 1:
            cur = taps[0]
            continue
        out = op(taps[0], taps[1])
        for view in taps[2:]:
            op(out, view, out=out)
        cur = out
    return np.array(cur, copy=True) if np.shares_memory(cur, xp) else cur


def _window_counts(g: Geometry, spatial: Sequence[int], include_pad: bool) -> np.ndarray:
    """How many taps of each window fall inside X (or inside X plus its declared pads).

    The count is a product over axes, built as an outer product of per-axis counts.
    """
    total = np.ones((), dtype=np.int64)
    for i, n in enumerate(spatial):
        k, d, s, o = g.kernel[i], g.dilations[i], g.strides[i], g.out[i]
        pos = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d
        lo, hi = (0, n + g.begin[i] + g.end[i] - g.overhang[i])
        if not include_pad:
            lo, hi = g.begin[i], g.begin[i] + n
        count = ((pos >= lo) & (pos < hi)).sum(axis=1)
        total = np.multiply.outer(total, count)
    return total


def _max_with_indices(
    x: np.ndarray, g: Geometry, storage_order: int
) -> tuple[np.ndarray, np.ndarray]:
    """Max over each window and where it came from, as ONNX's flat index into X.

    The first maximal tap in row-major window order wins, as in onnxruntime. storage_order 1
    numbers the spatial positions column-major.
    """
    xp = pad_spatial(x, g, _lowest(x.dtype))
    taps = list(np.ndindex(*g.kernel))
    first: Index = (Ellipsis, *tap_slices(g, taps[0]))
    best = np.array(xp[first], copy=True)
    which = np.zeros(best.shape, dtype=np.int64)
    for t, tap in enumerate(taps[1:], start=1):
        pick: Index = (Ellipsis, *tap_slices(g, tap))
        view = xp[pick]
        better = view > best
        np.copyto(best, view, where=better)
        which[better] = t
    spatial = x.shape[2:]
    rank = len(spatial)
    order = range(rank) if storage_order else range(rank - 1, -1, -1)
    flat = np.zeros_like(which)
    scale = 1
    table = np.array(taps, dtype=np.int64).reshape(-1, rank)
    for i in order:
        shape = [1] * (rank + 2)
        shape[i + 2] = g.out[i]
        start = (np.arange(g.out[i]) * g.strides[i] - g.begin[i]).reshape(shape)
        flat += (start + table[which, i] * g.dilations[i]) * scale
        scale *= spatial[i]
    plane = np.arange(x.shape[0] * x.shape[1], dtype=np.int64).reshape(x.shape[:2] + (1,) * rank)
    flat += plane * scale
    return best, flat


@kernel("MaxPool", since=1)
def max_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """MaxPool-1: no dilations, ceil mode or Indices output."""
    return _prepared("max", x, kernel_shape, strides, None, pads, auto_pad, 0)(x)


@kernel("MaxPool", since=8)
def max_pool_8(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    storage_order: int = 0,
    strides: Ints = None,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """MaxPool-8 adds the optional Indices output and its storage_order."""
    if num_outputs >= 2:
        g = _geometry(x, kernel_shape, strides, None, pads, auto_pad, 0)
        return _max_with_indices(x, g, storage_order)
    return _prepared("max", x, kernel_shape, strides, None, pads, auto_pad, 0)(x)


@kernel("MaxPool", since=10)
def max_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    pads: Ints = None,
    storage_order: int = 0,
    strides: Ints = None,
    num_outputs: int = 1,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """MaxPool-10 on (11 and 12 only widen types): ceil_mode and dilations. Y alone by
    shifted whole-buffer maxima, (Y, Indices) by a tap loop that tracks the argmax."""
    if num_outputs >= 2:
        g = _geometry(x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)
        return _max_with_indices(x, g, storage_order)
    return _prepared("max", x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode)(x)


@kernel("AveragePool", since=1)
def average_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-1: padding never counts."""
    return _prepared("average", x, kernel_shape, strides, None, pads, auto_pad, 0, 0)(x)


@kernel("AveragePool", since=7)
def average_pool_7(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    count_include_pad: int = 0,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-7 adds count_include_pad."""
    run = _prepared(
        "average", x, kernel_shape, strides, None, pads, auto_pad, 0, int(count_include_pad)
    )
    return run(x)


@kernel("AveragePool", since=10)
def average_pool_10(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-10 (and 11) add ceil_mode; the overhang past the pads never counts."""
    run = _prepared(
        "average",
        x,
        kernel_shape,
        strides,
        None,
        pads,
        auto_pad,
        ceil_mode,
        int(count_include_pad),
    )
    return run(x)


@kernel("AveragePool", since=19)
def average_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    count_include_pad: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """AveragePool-19 adds dilations."""
    run = _prepared(
        "average",
        x,
        kernel_shape,
        strides,
        dilations,
        pads,
        auto_pad,
        ceil_mode,
        int(count_include_pad),
    )
    return run(x)


@kernel("LpPool", since=1)
def lp_pool_1(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    p: float = 2.0,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-1 takes p as a float."""
    return _prepared("lp", x, kernel_shape, strides, None, pads, auto_pad, 0, float(p))(x)


@kernel("LpPool", since=2)
def lp_pool_2(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    kernel_shape: Ints = None,
    p: int = 2,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-2 (and 11) take p as an int."""
    return _prepared("lp", x, kernel_shape, strides, None, pads, auto_pad, 0, int(p))(x)


@kernel("LpPool", since=18)
def lp_pool(
    x: np.ndarray,
    *,
    auto_pad: str = "NOTSET",
    ceil_mode: int = 0,
    dilations: Ints = None,
    kernel_shape: Ints = None,
    p: int = 2,
    pads: Ints = None,
    strides: Ints = None,
) -> np.ndarray:
    """LpPool-18 adds ceil_mode and dilations."""
    run = _prepared("lp", x, kernel_shape, strides, dilations, pads, auto_pad, ceil_mode, int(p))
    return run(x)


def _spatial_axes(x: np.ndarray) -> tuple[int, ...]:
    return tuple(range(2, x.ndim))


@kernel("GlobalAveragePool", since=1)
def global_average_pool(x: np.ndarray) -> np.ndarray:
    """Mean over every spatial axis, kept as size-1 axes."""
    return np.mean(x, axis=_spatial_axes(x), keepdims=True, dtype=x.dtype)


@kernel("GlobalMaxPool", since=1)
def global_max_pool(x: np.ndarray) -> np.ndarray:
    """Max over every spatial axis, kept as size-1 axes."""
    return np.max(x, axis=_spatial_axes(x), keepdims=True)


@kernel("GlobalLpPool", since=1)
def global_lp_pool_1(x: np.ndarray, *, p: float = 2.0) -> np.ndarray:
    """GlobalLpPool-1 takes p as a float."""
    return global_lp_pool(x, p=p)


@kernel("GlobalLpPool", since=2)
def global_lp_pool(x: np.ndarray, *, p: float = 2) -> np.ndarray:
    """(sum over every spatial axis of |x|^p)^(1/p), kept as size-1 axes."""
    axes = _spatial_axes(x)
    if p == 2:
        return np.sqrt(np.sum(np.square(x), axis=axes, keepdims=True))
    total = np.sum(np.power(np.abs(x), x.dtype.type(p)), axis=axes, keepdims=True)
    return np.power(total, total.dtype.type(1.0 / p))
