"""What the first pass checks after (and before) each node: outputs the node must give, memory,
declared shapes, and inputs of a type the op cannot compute on.

The later passes skip all of it: whatever a kernel could trip over was met once already.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from xocview.errors import RunError
from xocview.executor.memory import LiveBytes
from xocview.executor.result import RunResult
from xocview.model import Graph
from xocview.model.dtypes import canonical_dtype

if TYPE_CHECKING:
    from xocview.executor.plan import Step

__all__ = ["MAX_WARNINGS", "FirstPassChecks", "string_ops"]

MAX_WARNINGS = 20
# ONNX domains whose schemas say which ops take strings
_SCHEMA_DOMAINS = frozenset({"", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"})


@functools.cache
def string_ops() -> tuple[frozenset[str], frozenset[str]]:
    """(ops some version of whose ONNX schema takes a string tensor, every op with a schema).

    Read from onnx's schemas once, and only when a string tensor reaches a node: a numeric
    kernel given strings fails with a Python message, so the node is refused by name instead.
    """
    import onnx.defs

    takes, known = set(), set()
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain not in _SCHEMA_DOMAINS:
            continue
        known.add(schema.name)
        types = [t for c in schema.type_constraints for t in c.allowed_type_strs]
        types += [f.type_str for f in schema.inputs]
        if any("string" in t for t in types):
            takes.add(schema.name)
    return frozenset(takes), frozenset(known)


def _is_strings(value: Any) -> bool:
    if type(value) is not np.ndarray or value.dtype.kind not in "OUS":
        return False
    return value.dtype.kind != "O" or (value.size > 0 and isinstance(value.flat[0], str | bytes))


class FirstPassChecks:
    """The first pass's checks (a mixin: the session holds the state and says how a node's
    error reads)."""

    graph: Graph
    values: list[Any]
    memory: LiveBytes
    result: RunResult
    needed: set[int]
    warned: set[str]  # nodes warned about
    shape_warned: set[int]  # tensors warned about

    def error(self, step: Step, args: list[Any], problem: str) -> RunError:
        raise NotImplementedError

    def check_inputs(self, step: Step, args: list[Any]) -> None:
        """A string tensor given to an op that computes on numbers is refused by name."""
        for k, a in enumerate(args):
            if not _is_strings(a):
                continue
            takes, known = string_ops()
            if step.op_type in known and step.op_type not in takes:
                raise self.error(
                    step,
                    args,
                    f"input {k} is a tensor of strings; op {step.op_type!r} computes on "
                    "numbers (its ONNX schema takes no strings)",
                )
            return

    def missing_outputs(self, step: Step, args: list[Any], given: int) -> None:
        """A kernel may leave out trailing outputs that nothing reads (MXNet's BatchNorm lists
        its batch statistics as outputs); one that is read stops the run."""
        lacking = [t for k, t in step.outputs if k >= given]
        if any(t in self.needed for t in lacking):
            raise self.error(
                step, args, f"the kernel gave {given} outputs, the node has {step.num_outputs}"
            )
        if step.node_id not in self.warned and len(self.result.warnings) < MAX_WARNINGS:
            self.warned.add(step.node_id)
            self.result.warnings.append(
                f"node {step.node_id!r} ({step.op_type}): gives {given} of its "
                f"{step.num_outputs} outputs; the others are read by nothing and stay empty"
            )

    def account(self, step: Step) -> None:
        """Memory and declared-shape checks, and measured shapes, on the first pass only."""
        memory, values = self.memory, self.values
        for _, t in step.outputs:
            memory.add(values[t])
            self.check_shape(step, t, maker=len(step.fused_with) - 1)  # a chain's last node
            self.measure(t)
        if step.hidden:  # tensors inside a fused chain: the shape and type of its output
            out = self.values[step.outputs[0][1]]
            measured = self.result.shapes.get(self.graph.tensors[step.outputs[0][1]].id)
            for k, t in enumerate(step.hidden):
                if measured is not None:
                    self.result.shapes[self.graph.tensors[t].id] = measured
                self.check_shape(step, t, out, k - 1)
        for t in step.frees:
            memory.drop(values[t])

    def measure(self, t: int) -> None:
        value = self.values[t]
        if isinstance(value, np.ndarray):
            self.result.shapes[self.graph.tensors[t].id] = (list(value.shape), _name(value.dtype))

    def check_shape(self, step: Step, t: int, value: Any = None, maker: int = -1) -> None:
        """A warning when tensor ``t`` (its value, or ``value`` for a tensor inside a fused
        chain, made by ``fused_with[maker]``) differs from the shape the file declares; once
        per tensor, though a body node makes its tensors on every iteration."""
        tensor = self.graph.tensors[t]
        value = self.values[t] if value is None else value
        if tensor.metadata.get("rank_unknown") or not isinstance(value, np.ndarray):
            return
        node_id, op_type = step.fused_with[maker] if maker >= 0 else (step.node_id, step.op_type)
        declared = tensor.shape
        differs = len(declared) != value.ndim or any(
            d >= 0 and d != g for d, g in zip(declared, value.shape, strict=True)
        )
        if differs and t not in self.shape_warned and len(self.result.warnings) < MAX_WARNINGS:
            self.shape_warned.add(t)
            self.result.warnings.append(
                f"node {node_id!r} ({op_type}): output {tensor.id!r} has shape "
                f"{list(value.shape)}, declared {list(declared)}"
            )


_NAMES: dict[np.dtype[Any], str] = {}


def _name(dtype: np.dtype[Any]) -> str:
    """The shared model's name of a numpy dtype; ``dtype.name`` is slow (11 us: 1.7 s a pass
    of 150k nodes), so each dtype is named once."""
    found = _NAMES.get(dtype)
    if found is None:
        found = _NAMES[dtype] = canonical_dtype(dtype.name) or "undefined"
    return found
