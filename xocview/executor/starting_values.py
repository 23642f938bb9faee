"""The values a run starts from: fed inputs, stored weights, and seeded random data of the
declared (or inferred) shape for the rest, each held to the memory budget before it is made."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.errors import RunError
from xocview.executor.budget import format_size
from xocview.executor.failures import kernel_problem
from xocview.executor.feeds import (
    numpy_dtype,
    random_value,
    read_feed,
    resolved_shape,
    seeded_rng,
    shape_known,
    stored_value,
)
from xocview.executor.memory import LiveBytes
from xocview.executor.result import RunResult
from xocview.executor.weight_shapes import (
    SHAPE_ARGUMENTS,
    infer_shape_argument,
    infer_weight_shape,
)
from xocview.model import Graph

if TYPE_CHECKING:
    from xocview.executor.plan import Plan, Step

__all__ = ["RAISE_BUDGET", "StartingValues"]

RAISE_BUDGET = "raise the budget with --max-memory SIZE (or none for no limit)"


class StartingValues:
    """The part of a run's session that makes the inputs' and weights' values (a mixin: the
    session holds the state and says how a node's error reads)."""

    graph: Graph
    plan: Plan
    seed: int
    symbols: Mapping[str, int]
    default: int
    values: list[Any]
    memory: LiveBytes
    budget: int | None
    result: RunResult

    def error(self, step: Step, args: list[Any], problem: str) -> RunError:
        raise NotImplementedError

    def measure(self, t: int) -> None:
        raise NotImplementedError

    def rng(self, tensor: int) -> np.random.Generator:
        return seeded_rng(self.seed, tensor)

    def set_constants(self, feeds: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> None:
        """Values of inputs and weights; those of unknown shape wait for their first reader."""
        index = self.graph.index
        unknown = [k for k in feeds if not index.has_tensor(k)]
        if unknown:
            raise RunError(
                f"no tensor named {unknown[0]!r} to feed; inputs are "
                + ", ".join(repr(self.graph.tensors[t].id) for t in self.graph.inputs)
            )
        shape_args = {
            t
            for step in self.plan.folded + self.plan.steps
            for k, t in enumerate(step.inputs)
            if t is not None and (step.op_type, k) in SHAPE_ARGUMENTS
        }
        for t in self.plan.constants:
            tensor = self.graph.tensors[t]
            if tensor.id not in feeds and tensor.id not in shapes and not tensor.has_data:
                if t in shape_args and tensor.kind == "weight":
                    continue  # its value follows from its reader's output shape: made there
                if not shape_known(tensor):
                    continue  # a weight of unknown shape: made when its reader first runs
            self.store_constant(t, tensor.kind, self.constant_value(t, feeds, shapes))

    def constant_value(
        self, t: int, feeds: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]
    ) -> np.ndarray:
        """A fed value, the stored weight values, or seeded random data of the right shape."""
        tensor = self.graph.tensors[t]
        if tensor.id in feeds:
            return read_feed(tensor, feeds[tensor.id])
        if tensor.id in shapes:
            shape = tuple(int(d) for d in shapes[tensor.id])
        elif tensor.has_data:
            return stored_value(tensor)
        else:
            shape = resolved_shape(tensor, self.symbols, self.default)
        return self.random(t, shape)

    def random(self, t: int, shape: tuple[int, ...], at: str = "") -> np.ndarray:
        """Seeded random values for tensor ``t``, refused before allocation when they would take
        the live tensors over the budget (or a dimension is negative)."""
        tensor = self.graph.tensors[t]
        dtype = numpy_dtype(tensor)
        if any(d < 0 for d in shape):
            raise RunError(f"{at}{tensor.kind} {tensor.id!r}: shape {list(shape)} is negative")
        size = math.prod(shape) * dtype.itemsize
        if self.budget is not None and self.memory.current + size > self.budget:
            raise RunError(
                f"{at}{tensor.kind} {tensor.id!r} of shape {list(shape)} ({tensor.dtype}, "
                f"{format_size(size)}) would take the live tensors over the memory budget of "
                f"{format_size(self.budget)}; {RAISE_BUDGET}"
            )
        try:
            return random_value(tensor, shape, dtype, self.rng(t))
        except (MemoryError, ValueError) as e:  # no budget, or memory taken by others
            raise RunError(
                f"{at}{tensor.kind} {tensor.id!r} of shape {list(shape)} ({tensor.dtype}, "
                f"{format_size(size)}): cannot make its random values ({kernel_problem(e)})"
            ) from e

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
            node = self.graph.nodes[step.node]
            value = infer_shape_argument(self.graph, node, k, args, numpy_dtype(tensor))
            if value is not None:
                self.store_constant(t, tensor.kind, value)
                args[k] = value
                continue
            shape: tuple[int, ...] | None = (
                resolved_shape(tensor, self.symbols, self.default)
                if shape_known(tensor)
                else infer_weight_shape(self.graph, node, k, args, step.kwargs)
            )
            kind = tensor.metadata.get("type")
            if shape is None and kind in ("map", "sequence"):  # DictVectorizer's, CastMap's
                raise self.error(
                    step,
                    args,
                    f"{tensor.kind} {tensor.id!r} is a {kind}; random values are made for "
                    "tensors only: give its value (a dict for a map) in the run's feeds",
                )
            if shape is None:
                raise self.error(
                    step,
                    args,
                    f"{tensor.kind} {tensor.id!r} has no known shape; give it with a value "
                    "(an input's .npy file) or a shape",
                )
            value = self.random(t, shape, f"node {step.node_id!r} ({step.op_type}): ")
            self.store_constant(t, tensor.kind, value)
            args[k] = value

    def store_constant(self, t: int, kind: str, value: np.ndarray) -> None:
        self.values[t] = value
        self.memory.add(value)
        self.measure(t)
        if kind == "weight":
            self.result.weight_bytes += int(value.nbytes)
