"""The peak memory a run will need, estimated from declared shapes before anything is allocated.

The estimate follows the runtime exactly where shapes are known: inputs and weights (given,
stored or to be filled with random data) live for the whole run, as do the outputs of folded
steps, except those only folded steps read (``fold_frees``), which go once folding has passed
them; every other tensor lives from the step that makes it to its last reader (``Step.frees``).
Tensors whose shape is unknown until the run (no rank, an unnamed symbolic dimension of an
activation) count as zero and are reported as unknown; the runtime guards those as it goes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xocview.errors import RunError
from xocview.executor.budget import format_size
from xocview.executor.plan import Plan, fold_frees
from xocview.model import Graph, Tensor
from xocview.model.dtypes import DTYPES

__all__ = ["Estimate", "check_budget", "estimate_peak", "item_bytes"]

_HUGE = 1e30  # bytes: more than any machine has, still finite

_LARGEST = 3  # tensors a refusal names


@dataclass
class Estimate:
    """Estimated peak bytes, each tensor's estimated bytes (0 where unknown), unknown count."""

    peak: float
    sizes: np.ndarray  # float64 per tensor: float so that 10^9 x 10^9 cannot overflow
    shapes: list[tuple[int, ...] | None]
    unknown: int


def item_bytes(dtype: str) -> int:
    """Bytes per element as the executor stores it: unknown types run as float32, strings are
    object pointers, sub-byte types take a byte."""
    info = DTYPES.get(dtype)
    if info is None or info.name == "undefined":
        return 4
    if info.bits is None:
        return 8
    return max(1, info.bits // 8)


def _shape(
    tensor: Tensor, symbols: Mapping[str, int], default: int, constant: bool
) -> tuple[int, ...] | None:
    """The shape the run will give the tensor, or None when only the run can tell.

    A symbolic dimension takes the user's size if the tensor names its symbol; an unnamed one
    takes ``default`` on an input or weight (as the runtime does) and is unknown elsewhere.
    """
    if tensor.metadata.get("rank_unknown"):
        return None
    names = tensor.metadata.get("shape_symbols")
    out = []
    for k, d in enumerate(tensor.shape):
        if isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            out.append(d)
            continue
        name = names[k] if isinstance(names, list) and k < len(names) else None
        if name is not None:
            size = symbols.get(str(name), default)
        elif constant:
            size = default
        else:
            return None
        out.append(int(size))
    return tuple(out)


def _constant_shape(
    tensor: Tensor,
    feeds: Mapping[str, Any],
    shapes: Mapping[str, Sequence[int]],
    symbols: Mapping[str, int],
    default: int,
) -> tuple[int, ...] | None:
    """An input's or weight's shape: of the array fed, the shape given, or the declared one."""
    fed = feeds.get(tensor.id)
    if isinstance(fed, np.ndarray):
        return tuple(fed.shape)
    if tensor.id in shapes:
        return tuple(int(d) for d in shapes[tensor.id])
    return _shape(tensor, symbols, default, constant=True)


def estimate_peak(
    graph: Graph,
    plan: Plan,
    feeds: Mapping[str, Any],
    shapes: Mapping[str, Sequence[int]],
    symbols: Mapping[str, int],
    default: int,
) -> Estimate:
    """The estimated peak of the bytes live at once during the first pass (linear time)."""
    n = len(graph.tensors)
    sizes = np.zeros(n, dtype=np.float64)
    known_shapes: list[tuple[int, ...] | None] = [None] * n
    counted = np.zeros(n, dtype=bool)
    steps = plan.folded + plan.steps
    made = [t for step in steps for _, t in step.outputs]
    for t in plan.constants:
        tensor = graph.tensors[t]
        known_shapes[t] = _constant_shape(tensor, feeds, shapes, symbols, default)
        counted[t] = True
    for t in made:
        known_shapes[t] = _shape(graph.tensors[t], symbols, default, constant=False)
        counted[t] = True
    unknown = 0
    for t in np.flatnonzero(counted).tolist():
        shape = known_shapes[t]
        if shape is None:
            unknown += 1
        else:
            # in floats: a thousand large dims overflow to inf, not past what float() takes
            elements = 0.0 if 0 in shape else math.prod(map(float, shape))
            # capped, so that sums and differences of live sizes never meet inf - inf
            sizes[t] = min(elements * item_bytes(graph.tensors[t].dtype), _HUGE)
    alive = float(sizes[plan.constants].sum()) if plan.constants else 0.0
    fold_peak = alive
    for step, dead in zip(plan.folded, fold_frees(plan), strict=True):
        alive += sum(float(sizes[t]) for _, t in step.outputs)
        fold_peak = max(fold_peak, alive)
        alive -= float(sizes[dead].sum()) if dead else 0.0
    peak = max(fold_peak, alive + _step_peak(plan, sizes))
    return Estimate(peak, sizes, known_shapes, unknown)


def _step_peak(plan: Plan, sizes: np.ndarray) -> float:
    """The largest bytes held by the timed steps' tensors at once: each step's outputs join
    those still alive, and its dead tensors go after it."""
    count = len(plan.steps)
    if count == 0:
        return 0.0
    out_step = [s for s, step in enumerate(plan.steps) for _ in step.outputs]
    out_t = [t for step in plan.steps for _, t in step.outputs]
    free_step = [s for s, step in enumerate(plan.steps) for _ in step.frees]
    free_t = [t for step in plan.steps for t in step.frees]
    added = np.bincount(out_step, weights=sizes[out_t], minlength=count) if out_t else 0.0
    freed = np.bincount(free_step, weights=sizes[free_t], minlength=count) if free_t else 0.0
    alive_after = np.cumsum(np.zeros(count) + added - freed)
    return float(np.max(alive_after + freed))


def check_budget(graph: Graph, estimate: Estimate, budget: int) -> None:
    """Refuse a run whose estimated peak is over ``budget`` bytes, naming the largest tensors.

    Raises RunError saying how to raise the budget.
    """
    if estimate.peak <= budget:
        return
    sizes = estimate.sizes
    top = [t for t in np.argsort(-sizes, kind="stable")[:_LARGEST] if sizes[t] > 0]
    largest = ", ".join(_describe(graph.tensors[t], estimate.shapes[t], sizes[t]) for t in top)
    k = estimate.unknown
    unknown = f" (besides {k} tensor{'s' * (k != 1)} sized only by the run)" if k else ""
    raise RunError(
        f"the run needs about {format_size(estimate.peak)} for its tensors{unknown}, over the "
        f"memory budget of {format_size(budget)}; largest: {largest}; to run it anyway, raise "
        "the budget with --max-memory SIZE (e.g. 16G, or none for no limit; max_memory=bytes "
        "in xocview.executor.run)"
    )


def _describe(tensor: Tensor, shape: tuple[int, ...] | None, size: float) -> str:
    dims = "?" if shape is None else ",".join(map(str, shape))
    return f"{tensor.kind} {tensor.id!r} [{dims}] {tensor.dtype} {format_size(size)}"
