"""If, Loop and Scan: kernels whose graph attributes arrive as callables.

The planner plans each body and the runtime binds it: ``body(*values)`` runs the body's steps
(timed, each body node's time summed over the calls) and returns the values of its outputs.
Values flowing through bodies may be tensors, sequences (lists) or optionals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from xocview.executor.registry import kernel

__all__ = ["if_", "loop", "scan", "scan_8"]

Body = Callable[..., list[Any]]


def _begin(body: Body, expected: int | None) -> None:
    """Tell a bound body (see bound_body) that its holder starts iterating; plain callables
    (tests, other runtimes) have nothing to tell."""
    begin = getattr(body, "begin", None)
    if begin is not None:
        begin(expected)


def _truth(value: Any, op: str, what: str) -> bool:
    """A one-element boolean (or number) tensor as a Python bool."""
    arr = np.asarray(value)
    if arr.size != 1:
        raise ValueError(f"{op}: {what} must have one element; got shape {list(arr.shape)}")
    return bool(arr.reshape(-1)[0])


@kernel("If", since=1)
def if_(cond: np.ndarray, *, then_branch: Body, else_branch: Body) -> tuple[Any, ...]:
    """The outputs of the branch ``cond`` picks."""
    branch = then_branch if _truth(cond, "If", "cond") else else_branch
    return tuple(branch())


def _stack(slices: list[Any], axis: int = 0, reverse: bool = False) -> np.ndarray:
    """Per-iteration values stacked along a new ``axis`` (in iteration order, or reversed)."""
    if not slices:  # no iteration: an empty tensor (the body never said its type)
        return np.empty((0,), dtype=np.float32)
    arrays = [np.asarray(s) for s in (reversed(slices) if reverse else slices)]
    rank = arrays[0].ndim + 1
    if not -rank <= axis < rank:
        raise ValueError(f"scan output axis {axis} is out of range for rank {rank}")
    return np.stack(arrays, axis=axis % rank)


@kernel("Loop", since=1)
def loop(
    max_trip_count: np.ndarray | None = None,
    cond: np.ndarray | None = None,
    *initial: Any,
    body: Body,
) -> tuple[Any, ...]:
    """Run ``body(iteration, cond, *carried)`` while the trip count and the condition allow;
    returns the final carried values, then each scan output stacked over the iterations.

    The body's condition is honoured with or without a ``cond`` input, as onnxruntime does
    (Loop's pseudo-code updates it on every iteration); a loop with neither a trip count nor a
    condition runs until the body's condition is false. After the first iteration a bound body
    may refuse a trip count that could never finish (see bound_body).
    """
    limit = None if max_trip_count is None else int(np.asarray(max_trip_count).reshape(-1)[0])
    keep_going = True if cond is None else _truth(cond, "Loop", "cond")
    counter_type = np.int64 if max_trip_count is None else np.asarray(max_trip_count).dtype
    carried = list(initial)
    scans: list[list[Any]] | None = None
    i = 0
    _begin(body, limit if limit is None or limit < 2**63 - 1 else None)
    if keep_going and (limit is None or limit > 0):
        precheck = getattr(body, "check_before_start", None)
        if precheck is not None:
            precheck(limit)
    while keep_going and (limit is None or i < limit):
        flag = np.array(True) if cond is None else np.array(keep_going)
        out = body(np.array(i, dtype=counter_type), flag, *carried)
        if len(out) < 1 + len(carried):
            raise ValueError(
                f"Loop: the body gives {len(out)} outputs; expected the condition and "
                f"{len(carried)} carried values at least"
            )
        keep_going = _truth(out[0], "Loop", "the body's condition")
        if i == 0 and keep_going:
            check = getattr(body, "check_trip_count", None)
            if check is not None:
                check(limit)
        carried = list(out[1 : 1 + len(carried)])
        step_scans = out[1 + len(initial) :]
        if scans is None:
            scans = [[] for _ in step_scans]
        for collected, value in zip(scans, step_scans, strict=True):
            collected.append(value)
        i += 1
    if scans is None:  # no iteration: as many empty scan outputs as the body would give
        total = getattr(body, "num_outputs", 1 + len(initial))
        scans = [[] for _ in range(max(0, total - 1 - len(initial)))]
    return (*carried, *(_stack(c) for c in scans))


def _axes(values: Sequence[int] | None, count: int, name: str) -> list[int]:
    if values is None:
        return [0] * count
    if len(values) != count:
        raise ValueError(f"Scan: {name} has {len(values)} entries; expected {count}")
    return [int(v) for v in values]


def _scan(
    states: list[Any],
    scanned: list[np.ndarray],
    body: Body,
    input_axes: list[int],
    input_directions: list[int],
    output_axes: list[int] | None,
    output_directions: list[int] | None,
) -> tuple[Any, ...]:
    """Scan 9+'s semantics on one batch item: states carried, inputs sliced along their
    axes (reversed where the direction is 1), outputs stacked along theirs."""
    axes = []
    for x, axis in zip(scanned, input_axes, strict=True):
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"Scan: scan_input_axes {axis} is out of range for rank {x.ndim}")
        axes.append(axis % x.ndim)
    lengths = {x.shape[a] for x, a in zip(scanned, axes, strict=True)}
    if len(lengths) > 1:
        raise ValueError(f"Scan: the scan inputs have different lengths {sorted(lengths)}")
    steps = lengths.pop() if lengths else 0
    _begin(body, steps)
    collected: list[list[Any]] | None = None
    for t in range(steps):
        slices = [
            np.take(x, steps - 1 - t if d else t, axis=a)
            for x, a, d in zip(scanned, axes, input_directions, strict=True)
        ]
        out = body(*states, *slices)
        states = list(out[: len(states)])
        if collected is None:
            collected = [[] for _ in out[len(states) :]]
        for bucket, value in zip(collected, out[len(states) :], strict=True):
            bucket.append(value)
    collected = collected or []
    k = len(collected)
    out_axes = _axes(output_axes, k, "scan_output_axes")
    out_dirs = _axes(output_directions, k, "scan_output_directions")
    return (
        *states,
        *(_stack(c, a, bool(d)) for c, a, d in zip(collected, out_axes, out_dirs, strict=True)),
    )


@kernel("Scan", since=9)
def scan(
    *inputs: Any,
    body: Body,
    num_scan_inputs: int,
    scan_input_axes: list[int] | None = None,
    scan_input_directions: list[int] | None = None,
    scan_output_axes: list[int] | None = None,
    scan_output_directions: list[int] | None = None,
) -> tuple[Any, ...]:
    """The first inputs are the initial states, the last ``num_scan_inputs`` are scanned."""
    m = int(num_scan_inputs)
    if not 0 < m <= len(inputs):
        raise ValueError(f"Scan: num_scan_inputs {m} for {len(inputs)} inputs")
    states, scanned = list(inputs[:-m]), [np.asarray(x) for x in inputs[-m:]]
    return _scan(
        states,
        scanned,
        body,
        _axes(scan_input_axes, m, "scan_input_axes"),
        _axes(scan_input_directions, m, "scan_input_directions"),
        scan_output_axes,
        scan_output_directions,
    )


@kernel("Scan", since=8)
def scan_8(
    sequence_lens: np.ndarray | None = None,
    *inputs: Any,
    body: Body,
    num_scan_inputs: int,
    directions: list[int] | None = None,
) -> tuple[Any, ...]:
    """Opset 8: every input has a batch axis 0 and the scan runs along axis 1, per batch item;
    ``sequence_lens`` shorter than the inputs is not supported."""
    m = int(num_scan_inputs)
    if not 0 < m <= len(inputs):
        raise ValueError(f"Scan: num_scan_inputs {m} for {len(inputs)} inputs")
    states, scanned = list(inputs[:-m]), [np.asarray(x) for x in inputs[-m:]]
    batch = scanned[0].shape[0]
    if sequence_lens is not None:
        lens = np.asarray(sequence_lens).reshape(-1)
        if np.any(lens != scanned[0].shape[1]):
            raise ValueError(
                f"Scan: sequence_lens {lens.tolist()} shorter than the inputs are not supported"
            )
    per_item = [
        _scan(
            [np.asarray(s)[b] for s in states],
            [x[b] for x in scanned],
            body,
            [0] * m,
            _axes(directions, m, "directions"),
            None,
            None,
        )
        for b in range(batch)
    ]
    if not per_item:
        raise ValueError("Scan: a batch of 0 is not supported")
    return tuple(np.stack(values) for values in zip(*per_item, strict=True))
