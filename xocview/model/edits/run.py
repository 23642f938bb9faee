"""What a profiling run learnt, recorded as one edit: node times and measured tensor shapes.

Files such as MXNet symbols and LightNet IR carry no shapes for most values; a run computes
every one of them. Shapes and dtypes the graph does not know are filled in from what the run
measured, and the tensor's metadata says so (``shape_source: run``): they hold for the inputs
of that run. Known sizes and named symbolic dimensions (a dynamic batch) are kept as they are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from xocview.model.edits.attrs import nodes_metadata_steps
from xocview.model.edits.steps import Edit, Ref, SetField, Step

if TYPE_CHECKING:
    from xocview.model.graph import Graph, Tensor

__all__ = ["SHAPE_SOURCE_KEY", "measured_shape_steps", "record_run"]

SHAPE_SOURCE_KEY = "shape_source"


def record_run(
    graph: Graph,
    key: str,
    times: dict[str, Any],
    measured: Mapping[str, tuple[Sequence[int], str]],
    description: str,
) -> Edit:
    """Set ``key`` of the nodes in ``times`` and fill in the measured shapes and dtypes that
    the graph lacks, as one undo step; its description counts the tensors filled in. Raises
    EditError like ``nodes_metadata_steps`` (unknown node, value without a JSON form) before
    anything changes; unknown tensors are skipped."""
    steps: list[Step] = [*nodes_metadata_steps(graph, key, times)]
    filled = measured_shape_steps(graph, measured)
    steps += filled
    tensors = sum(1 for step in filled if step.field == "metadata")  # one per tensor filled
    if tensors:
        description += f" and the measured shapes of {tensors:,} tensors"
    edit = Edit(description, tuple(steps))
    edit.apply(graph)
    return edit


def measured_shape_steps(
    graph: Graph, measured: Mapping[str, tuple[Sequence[int], str]]
) -> list[SetField]:
    """Steps that give tensors of unknown rank, unknown unnamed sizes or undefined dtype the
    shape and dtype measured (``{tensor id: (shape, dtype)}``); nothing else changes."""
    index = graph.index
    steps: list[SetField] = []
    for tensor_id, (shape, dtype) in measured.items():
        if not index.has_tensor(tensor_id):
            continue
        pos = index.tensor_position(tensor_id)
        t = graph.tensors[pos]
        new_shape = _filled_shape(t, [int(d) for d in shape])
        new_dtype = dtype if t.dtype == "undefined" and dtype != "undefined" else t.dtype
        if new_shape is None and new_dtype == t.dtype:
            continue
        ref: Ref = ("tensor", pos)
        if new_shape is not None:
            steps.append(SetField(ref, "shape", t.shape, new_shape))
        if new_dtype != t.dtype:
            steps.append(SetField(ref, "dtype", t.dtype, new_dtype))
        meta = {k: v for k, v in t.metadata.items() if k != "rank_unknown" or new_shape is None}
        meta[SHAPE_SOURCE_KEY] = "run"
        steps.append(SetField(ref, "metadata", t.metadata, meta))
    return steps


def _filled_shape(t: Tensor, measured: list[int]) -> list[int] | None:
    """The tensor's shape with its unknown parts measured; None when nothing would change
    (all known, a different rank than declared, or only named symbolic sizes unknown)."""
    if t.metadata.get("rank_unknown"):
        return measured
    if len(t.shape) != len(measured) or all(d >= 0 for d in t.shape):
        return None
    symbols = t.metadata.get("shape_symbols") or []
    filled = [
        m if d < 0 and not (k < len(symbols) and symbols[k]) else d
        for k, (d, m) in enumerate(zip(t.shape, measured, strict=True))
    ]
    return filled if filled != list(t.shape) else None
