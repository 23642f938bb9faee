"""The one node loop: run the plan's steps, time each, store outputs and free dead tensors."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from xocview.errors import RunError
from xocview.executor.arena import reused_memory
from xocview.executor.bound_body import Cancelled, Iteration, Iterations, bind_bodies
from xocview.executor.budget import address_space_limit, format_size, resolve_budget
from xocview.executor.coverage import check_order, check_sources
from xocview.executor.estimate import check_budget, estimate_peak
from xocview.executor.failures import kernel_problem
from xocview.executor.first_pass import FirstPassChecks
from xocview.executor.memory import LiveBytes
from xocview.executor.optional import Empty
from xocview.executor.plan import Plan, Step, all_steps, fold_frees, make_plan
from xocview.executor.result import RunResult
from xocview.executor.starting_values import RAISE_BUDGET, StartingValues
from xocview.executor.threads import limited_threads, resolve_threads
from xocview.executor.timings import Timings
from xocview.model import Graph
from xocview.model.gc_pause import gc_paused

__all__ = ["Iteration", "Progress", "run"]

# on_progress(done, total, node_id, seconds): called after every node of every pass.
Progress = Callable[[int, int, str, float], None]


def run(
    graph: Graph,
    feeds: Mapping[str, Any] | None = None,
    *,
    repeat: int = 1,
    warmup: int = 0,
    seed: int = 0,
    on_progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    on_iteration: Iteration | None = None,
    symbols: Mapping[str, int] | None = None,
    symbol_default: int = 1,
    shapes: Mapping[str, Sequence[int]] | None = None,
    fold_constants: bool = True,
    max_memory: int | None = None,
    threads: int | None = None,
    fuse: bool = True,
) -> RunResult:
    """Run the graph's leaves ``warmup + repeat`` times; median time per node over ``repeat``.

    ``feeds`` maps input ids to arrays or ``.npy`` paths; other inputs, and weights without
    values, get seeded random data of their declared shape (``shapes`` gives or overrides an
    input's shape; a symbolic dimension takes ``symbols[name]``, else ``symbol_default``).
    ``cancel()`` is polled between nodes and on every iteration of a Loop or Scan body; a
    cancelled run returns what it measured with ``cancelled`` set. ``on_iteration(node_id,
    done, total)`` tells, a few times a second, how far a Loop or Scan node has come (total:
    None when its condition decides). Raises RunError naming the node, its op and its input
    shapes when a node cannot run (a Loop whose trip count cannot finish among them); the
    error's ``partial`` holds the timings so far.

    Before anything is allocated the run is refused (RunError) when a tensor it reads or
    returns has no source, or when the peak memory estimated from the declared shapes is over
    ``max_memory`` bytes (None: half the available memory; 0: no limit); tensors whose size
    only the run tells are held to the same budget as they are made.

    Kernels run with ``threads`` BLAS/OpenMP threads (None: one, steady on a busy machine; 0:
    every core); the count is recorded in the result. Freed tensor memory is kept for the next
    pass while the run lasts (``arena``), so no pass pays page faults. With ``fuse``, Conv ->
    BatchNormalization -> Relu chains run as one step whose time is split back over its nodes
    by their FLOPs.
    """
    if repeat < 1 or warmup < 0:
        raise RunError(f"repeat must be >= 1 and warmup >= 0 (got {repeat} and {warmup})")
    # Planning builds objects per node and frees almost none: the cyclic collector would walk
    # the growing plan again and again (60% of planning a 131k-node graph of If bodies).
    with gc_paused():
        plan = make_plan(graph, fold_constants, fuse)
        check_order(graph, plan)
        check_sources(graph, plan)
        budget = resolve_budget(max_memory)
        if budget is not None:
            estimate = estimate_peak(
                graph, plan, feeds or {}, shapes or {}, symbols or {}, symbol_default
            )
            check_budget(graph, estimate, budget)
        try:
            count = resolve_threads(threads)
        except ValueError as e:
            raise RunError(str(e)) from None
        session = _Session(graph, plan, seed, symbols or {}, symbol_default)
    session.budget = budget
    session.result.threads = count
    session.iterations = Iterations(cancel, on_iteration)
    with address_space_limit(budget), limited_threads(count), reused_memory():
        session.set_constants(feeds or {}, shapes or {})
        try:
            session.fold()
        except Cancelled:
            session.result.cancelled = True
            return session.finish()
        return session.execute(warmup, repeat, on_progress, cancel)


class _Session(FirstPassChecks, StartingValues):
    def __init__(
        self, graph: Graph, plan: Plan, seed: int, symbols: Mapping[str, int], default: int
    ) -> None:
        self.graph, self.plan, self.seed = graph, plan, seed
        self.symbols, self.default = symbols, default
        # one slot per tensor and a last one that stays None: omitted inputs read it
        self.values: list[Any] = [None] * (len(graph.tensors) + 1)
        everything = all_steps(plan.folded + plan.steps)
        for step in everything:
            step.slots = [len(graph.tensors) if t is None else t for t in step.inputs]
            if step.bodies:
                bind_bodies(self, step)
        self.memory = LiveBytes()
        self.budget: int | None = None  # bytes the live tensors may take (None: no limit)
        self.checking = True  # the first pass (and folding): every check, memory counted
        self.fast: list[tuple[Any, ...]] | None = None  # the later passes' view of the steps
        # steps that run bodies, with their index among the timed steps (None inside a body)
        timed = {id(step): k for k, step in enumerate(plan.steps)}
        holders = [(timed.get(id(step)), step) for step in everything if step.bodies]
        self.timings = Timings(plan.steps, holders)
        self.warned: set[str] = set()
        self.shape_warned: set[int] = set()
        self.iterations = Iterations(None, None)
        self.needed = set(plan.outputs) | {
            t for step in everything for t in step.inputs if t is not None
        }
        self.result = RunResult(op_types={s.node_id: s.op_type for s in everything})
        for step in everything:
            self.result.op_types.update(step.fused_with)
        self.result.warnings.extend(s.note for s in plan.folded + plan.steps if s.note is not None)

    def fold(self) -> None:
        """Compute the constant steps once; their outputs stay like weights."""
        values = self.values
        frees = fold_frees(self.plan)
        for step, dead in zip(self.plan.folded, frees, strict=True):
            self.call(step)
            self.result.folded.append(step.node_id)
            for _, t in step.outputs:
                v = values[t]
                if isinstance(v, np.ndarray) and not v.flags.c_contiguous:
                    # a Transpose of a weight is a strided view: every pass would read it
                    # across the grain (a tied LM head's MatMul ran several times slower)
                    self.memory.drop(v)
                    values[t] = v = np.array(v, order="C")
                    self.memory.add(v)
                self.result.weight_bytes += int(getattr(v, "nbytes", 0))
            for t in dead:  # read by no later step: only the folded forms stay
                v = values[t]
                self.memory.drop(v)
                self.result.weight_bytes -= int(getattr(v, "nbytes", 0))
                values[t] = None
        # the bodies of folded nodes ran once too
        self.result.folded.extend(self.timings.body_pass)
        self.timings.body_pass = {}

    def body_call(self, step: Step) -> None:
        """One step of a body, checked in the first pass; its seconds add to the pass's sum."""
        if self.checking:
            seconds = self.call(step)
        else:
            values = self.values
            args = [values[t] for t in step.slots]
            start = time.perf_counter()
            try:
                kernel = step.kernel.fn if step.direct else step.kernel.call  # type: ignore[union-attr]
                out = kernel(*args, **step.kwargs)
            except RunError:
                raise
            except Exception as e:
                raise self.error(step, args, kernel_problem(e, step.op_type)) from e
            seconds = time.perf_counter() - start
            outs = out if type(out) is tuple else (out,)
            for k, t in step.outputs:
                if k < len(outs):
                    values[t] = outs[k]
            for t in step.frees:
                values[t] = None
        summed = self.timings.body_pass
        summed[step.node_id] = summed.get(step.node_id, 0.0) + seconds

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
        """The passes, with Python's cyclic garbage collector paused as timeit pauses it: a
        collection landing inside a kernel's timing would add its milliseconds to that node."""
        collecting = gc.isenabled()
        gc.disable()
        try:
            return self.passes(warmup, repeat, progress, cancel)
        except Cancelled:  # seen inside a body: the step it stopped in has no time
            self.result.cancelled = True
            return self.finish()
        finally:
            if collecting:
                gc.enable()

    def passes(
        self, warmup: int, repeat: int, progress: Progress | None, cancel: Callable[[], bool] | None
    ) -> RunResult:
        total = (warmup + repeat) * len(self.plan.steps)
        pass_times: list[float] = []
        for p in range(warmup + repeat):
            start = time.perf_counter()
            self.timings.body_pass = {}
            if p == 0:
                finished = self.first_pass(p >= warmup, progress, cancel, total)
                self.checking = False
            else:
                finished = self.pass_(
                    p >= warmup, progress, cancel, p * len(self.plan.steps), total
                )
            if not finished:
                self.result.cancelled = True
                return self.finish(pass_times)
            if p >= warmup:
                pass_times.append(time.perf_counter() - start)
                self.timings.record_bodies()
        return self.finish(pass_times)

    def first_pass(
        self, timed: bool, progress: Progress | None, cancel: Callable[[], bool] | None, total: int
    ) -> bool:
        """The checked pass: materialises weights, counts memory, compares declared shapes."""
        for s, step in enumerate(self.plan.steps):
            if cancel is not None and cancel():
                return False
            seconds = self.call(step)
            if timed:
                self.timings.samples[s].append(seconds)
            else:
                self.timings.untimed[s] = seconds
            if progress is not None:
                progress(s + 1, total, step.node_id, seconds)
        return True

    def pass_(
        self,
        timed: bool,
        progress: Progress | None,
        cancel: Callable[[], bool] | None,
        done: int,
        total: int,
    ) -> bool:
        """A later pass: the node loop with nothing but the call, its timing and the frees.

        Everything a kernel could trip over was met in the first pass, so this loop is kept to
        the few operations that the per-node overhead is made of.
        """
        values, perf = self.values, time.perf_counter
        if self.fast is None:
            self.fast = self.fast_steps()
        for s, (step, slots, kernel, kwargs, single, frees, taken) in enumerate(self.fast):
            if cancel is not None and cancel():
                return False
            args = [values[t] for t in slots]
            start = perf()
            try:
                out = kernel(*args, **kwargs) if kwargs else kernel(*args)
            except RunError:  # a body's node, named already
                raise
            except Exception as e:  # e.g. a kernel that fails on some data only
                raise self.error(step, args, kernel_problem(e, step.op_type)) from e
            seconds = perf() - start
            if type(out) is not tuple and single >= 0:
                values[single] = out
            else:
                outs = out if type(out) is tuple else (out,)
                for k, t in step.outputs:
                    if k < len(outs):
                        values[t] = outs[k]
            for t in frees:
                values[t] = None
            if timed:
                taken.append(seconds)
            if progress is not None:
                progress(done + s + 1, total, step.node_id, seconds)
        return True

    def fast_steps(self) -> list[tuple[Any, ...]]:
        """Per step what the later passes' loop reads, looked up once: the step, its input
        slots, the callable (the kernel itself when no input is narrow), its keyword arguments
        (None when it has none), its one output's slot (-1 when it has several), its frees and
        its list of timed samples."""
        fast = []
        for step, taken in zip(self.plan.steps, self.timings.samples, strict=True):
            assert step.kernel is not None
            kernel = step.kernel.fn if step.direct else step.kernel.call
            single = step.outputs[0][1] if [k for k, _ in step.outputs] == [0] else -1
            fast.append(
                (
                    step,
                    tuple(step.slots),
                    kernel,
                    step.kwargs or None,
                    single,
                    tuple(step.frees),
                    taken,
                )
            )
        return fast

    def call(self, step: Step) -> float:
        """Run one step with every check (the first pass, and folded steps); returns its
        seconds. Makes missing weights, stores outputs, counts memory, frees dead tensors."""
        values = self.values
        args = [None if t is None else values[t] for t in step.inputs]
        if step.kernel is None:
            raise self.error(step, args, step.problem or "no kernel")
        if any(a is None for a, t in zip(args, step.inputs, strict=True) if t is not None):
            try:
                self.materialise(step, args)
            except (ArithmeticError, ValueError, TypeError, IndexError) as e:  # bad attributes
                problem = f"cannot infer the shape of a weight ({kernel_problem(e)})"
                raise self.error(step, args, problem) from e
        self.check_inputs(step, args)
        start = time.perf_counter()
        try:
            out = step.kernel.call(*args, **step.kwargs)
            # later passes call the kernel itself when no input is of a narrow type (bfloat16,
            # float8, int4...): the widening wrapper's look at every input costs ~1 us a node
            step.direct = not any(type(a) is np.ndarray and a.dtype.kind == "V" for a in args)
        except RunError:
            raise
        except Exception as e:  # a kernel's numpy error becomes a located RunError
            raise self.error(step, args, kernel_problem(e, step.op_type)) from e
        seconds = time.perf_counter() - start
        outs = out if isinstance(out, tuple) else (out,)
        if step.outputs and step.outputs[-1][0] >= len(outs):
            self.missing_outputs(step, args, len(outs))
        for k, t in step.outputs:
            if k < len(outs):
                values[t] = outs[k]
        self.account(step)
        if self.budget is not None and self.memory.peak > self.budget:
            raise self.error(
                step,
                args,
                f"its outputs took the live tensors to {format_size(self.memory.peak)}, over "
                f"the memory budget of {format_size(self.budget)}; {RAISE_BUDGET}",
            )
        for t in step.frees:
            values[t] = None
        return seconds

    def finish(self, pass_times: list[float] | None = None) -> RunResult:
        r = self.result
        self.timings.fill(r)
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
        dtype = "string" if value.dtype.kind in "OUS" else str(value.dtype)
        return f"{dtype}[{','.join(map(str, value.shape))}]"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    if isinstance(value, dict):
        return f"map of {len(value)}"
    if isinstance(value, Empty):
        return "empty optional"
    return type(value).__name__
