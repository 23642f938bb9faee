"""The one node loop: run the plan's steps, time each, store outputs and free dead tensors."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from xocview.errors import RunError
from xocview.executor.feeds import (
    numpy_dtype,
    random_value,
    read_feed,
    resolved_shape,
    shape_known,
)
from xocview.executor.memory import LiveBytes
from xocview.executor.plan import Plan, Step, make_plan
from xocview.executor.result import RunResult
from xocview.executor.weight_shapes import infer_weight_shape
from xocview.model import Graph

__all__ = ["Progress", "run"]

# on_progress(done, total, node_id, seconds): called after every node of every pass.
Progress = Callable[[int, int, str, float], None]
_MAX_WARNINGS = 20


def run(
    graph: Graph,
    feeds: Mapping[str, Any] | None = None,
    *,
    repeat: int = 1,
    warmup: int = 0,
    seed: int = 0,
    on_progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    symbols: Mapping[str, int] | None = None,
    symbol_default: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
    fold_constants: bool = True,
) -> RunResult:
    """Run the graph's leaves ``warmup + repeat`` times; median time per node over ``repeat``.

    ``feeds`` maps input ids to arrays or ``.npy`` paths; other inputs, and weights without
    values, get seeded random data of their declared shape (``shapes`` gives or overrides an
    input's shape; a symbolic dimension takes ``symbols[name]``, else ``symbol_default``).
    ``cancel()`` is polled between nodes; a cancelled run returns what it measured with
    ``cancelled`` set. Raises RunError naming the node, its op and its input shapes when a node
    cannot run; the error's ``partial`` holds the timings so far.
    """
    if repeat < 1 or warmup < 0:
        raise RunError(f"repeat must be >= 1 and warmup >= 0 (got {repeat} and {warmup})")
    plan = make_plan(graph, fold_constants)
    session = _Session(graph, plan, seed, symbols or {}, symbol_default)
    session.set_constants(feeds or {}, shapes or {})
    session.fold()
    return session.execute(warmup, repeat, on_progress, cancel)


class _Session:
    def __init__(
        self, graph: Graph, plan: Plan, seed: int, symbols: Mapping[str, int], default: int
    ) -> None:
        self.graph, self.plan, self.seed = graph, plan, seed
        self.symbols, self.default = symbols, default
        self.values: list[Any] = [None] * len(graph.tensors)
        self.memory = LiveBytes()
        self.samples: list[list[float]] = [[] for _ in plan.steps]
        self.result = RunResult(op_types={s.node_id: s.op_type for s in plan.steps})

    def rng(self, tensor: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, tensor])

    def set_constants(self, feeds: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> None:
        """Values of inputs and weights; those of unknown shape wait for their first reader."""
        index = self.graph.index
        unknown = [k for k in feeds if not index.has_tensor(k)]
        if unknown:
            raise RunError(
                f"no tensor named {unknown[0]!r} to feed; inputs are "
                + ", ".join(repr(self.graph.tensors[t].id) for t in self.graph.inputs)
            )
        for t in self.plan.constants:
            tensor = self.graph.tensors[t]
            value: np.ndarray | None
            if tensor.id in feeds:
                value = read_feed(self.graph, tensor, feeds[tensor.id])
            elif tensor.id in shapes:
                shape = tuple(int(d) for d in shapes[tensor.id])
                value = random_value(tensor, shape, numpy_dtype(tensor), self.rng(t))
            elif tensor.has_data:
                value = tensor.data
            elif shape_known(tensor):
                shape = resolved_shape(tensor, self.symbols, self.default)
                value = random_value(tensor, shape, numpy_dtype(tensor), self.rng(t))
            else:
                continue  # a weight of unknown shape: made when its reader first runs
            self.values[t] = value
            self.memory.add(value)
            if tensor.kind == "weight":
                self.result.weight_bytes += int(getattr(value, "nbytes", 0))

    def fold(self) -> None:
        """Compute the constant steps once; their outputs stay like weights."""
        for step in self.plan.folded:
            self.call(step, first=True)
            self.result.folded.append(step.node_id)
            for _, t in step.outputs:
                self.result.weight_bytes += int(getattr(self.values[t], "nbytes", 0))

    def materialise(self, step: Step, args: list[Any]) -> None:
        """Random values for the step's inputs that still have none (shapes inferred)."""
        for k, t in enumerate(step.inputs):
            if t is None or args[k] is not None:
                continue
            tensor = self.graph.tensors[t]
            if tensor.kind not in ("weight", "input"):
                raise self.error(
                    step, args, f"input {tensor.id!r} has no value (nothing produces it)"
                )
            shape = infer_weight_shape(
                self.graph, self.graph.nodes[step.node], k, args, step.kwargs
            )
            if shape is None:
                raise self.error(
                    step,
                    args,
                    f"{tensor.kind} {tensor.id!r} has no known shape; give it with a value "
                    "(an input's .npy file) or a shape",
                )
            value = random_value(tensor, shape, numpy_dtype(tensor), self.rng(t))
            self.values[t] = args[k] = value
            self.memory.add(value)
            if tensor.kind == "weight":
                self.result.weight_bytes += value.nbytes

    def error(self, step: Step, args: list[Any], problem: str) -> RunError:
        shapes = ", ".join(_describe(a) for a in args)
        e = RunError(
            f"node {step.node_id!r} ({step.op_type}): {problem}; inputs: {shapes or 'none'}",
            step.node_id,
            step.op_type,
        )
        e.partial = self.finish()
        return e

    def execute(
        self, warmup: int, repeat: int, progress: Progress | None, cancel: Callable[[], bool] | None
    ) -> RunResult:
        steps = self.plan.steps
        total = (warmup + repeat) * len(steps)
        done = 0
        pass_times: list[float] = []
        for p in range(warmup + repeat):
            timed = p >= warmup
            start = time.perf_counter()
            for s, step in enumerate(steps):
                if cancel is not None and cancel():
                    self.result.cancelled = True
                    return self.finish(pass_times)
                seconds = self.call(step, first=p == 0)
                if timed:
                    self.samples[s].append(seconds)
                done += 1
                if progress is not None:
                    progress(done, total, step.node_id, seconds)
            if timed:
                pass_times.append(time.perf_counter() - start)
        return self.finish(pass_times)

    def call(self, step: Step, first: bool) -> float:
        """Run one step; returns its seconds. Stores outputs and frees dead tensors."""
        values = self.values
        args = [None if t is None else values[t] for t in step.inputs]
        if step.kernel is None:
            raise self.error(step, args, step.problem or "no kernel")
        if first and any(
            a is None for a, t in zip(args, step.inputs, strict=True) if t is not None
        ):
            self.materialise(step, args)
        start = time.perf_counter()
        try:
            out = step.kernel.fn(*args, **step.kwargs)
        except RunError:
            raise
        except Exception as e:  # a kernel's numpy error becomes a located RunError
            raise self.error(step, args, f"{type(e).__name__}: {e}") from e
        seconds = time.perf_counter() - start
        outs = out if isinstance(out, tuple) else (out,)
        if step.outputs and step.outputs[-1][0] >= len(outs):
            raise self.error(
                step, args, f"the kernel gave {len(outs)} outputs, the node has {step.num_outputs}"
            )
        for k, t in step.outputs:
            values[t] = outs[k]
        if first:
            self.account(step)
        for t in step.frees:
            values[t] = None
        return seconds

    def account(self, step: Step) -> None:
        """Memory and declared-shape checks, on the first pass only."""
        memory, values = self.memory, self.values
        for _, t in step.outputs:
            memory.add(values[t])
            self.check_shape(step, t)
        for t in step.frees:
            memory.drop(values[t])

    def check_shape(self, step: Step, t: int) -> None:
        tensor = self.graph.tensors[t]
        value = self.values[t]
        if tensor.metadata.get("rank_unknown") or not isinstance(value, np.ndarray):
            return
        declared = tensor.shape
        differs = len(declared) != value.ndim or any(
            d >= 0 and d != g for d, g in zip(declared, value.shape, strict=True)
        )
        if differs and len(self.result.warnings) < _MAX_WARNINGS:
            self.result.warnings.append(
                f"node {step.node_id!r} ({step.op_type}): output {tensor.id!r} has shape "
                f"{list(value.shape)}, declared {list(declared)}"
            )

    def finish(self, pass_times: list[float] | None = None) -> RunResult:
        r = self.result
        r.node_times = {
            step.node_id: float(np.median(times))
            for step, times in zip(self.plan.steps, self.samples, strict=True)
            if times
        }
        r.peak_bytes = self.memory.peak
        r.total_time = float(np.median(pass_times)) if pass_times else sum(r.node_times.values())
        r.outputs = {
            self.graph.tensors[t].id: self.values[t]
            for t in self.plan.outputs
            if self.values[t] is not None
        }
        return r


def _describe(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, np.ndarray):
        return f"{value.dtype}[{','.join(map(str, value.shape))}]"
    return type(value).__name__
