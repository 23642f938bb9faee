"""Declared types that ONNX shape inference contradicts, replaced before a model is written.

The shared model keeps the shapes the source declared or inference found when it was read.
An edit (a Conv's strides, a Gemm's transB) can make them wrong, and a wrong value_info or
graph output type fails the checker's strict inference and onnxruntime's loading. Inference
runs once on a weightless copy without the declared activation types; where it finds a type
the declaration contradicts, or one the model did not know, the inferred one is written.

The run is strict, with type checks, as onnx's full check runs it: when it passes and the
declared types end up as inferred, the writer's check need not infer a second time (on a
100k-node model each run costs seconds).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import onnx

from xocview.formats.onnx.attrs import bodies
from xocview.formats.onnx.expansion import plan
from xocview.formats.onnx.types import weightless_copy

__all__ = ["Settled", "replace_stale_types", "settle_types"]

# What the assembler hands over: each graph of the model (the main one first) with the
# value_info entries for it, not added yet.
Held = list[tuple[onnx.GraphProto, list[onnx.ValueInfoProto]]]


@dataclass(frozen=True)
class Settled:
    """``stale``: the values whose declared type was wrong (and was replaced). ``checked``:
    strict inference (with type checks) passed on the model as it now declares its types,
    which is all that onnx's full check adds to the plain one."""

    stale: list[str]
    checked: bool


def replace_stale_types(model: onnx.ModelProto) -> list[str]:
    """Give value_info entries and graph outputs the inferred type where theirs contradicts
    it or is missing; returns the names of the values whose declared type was wrong."""
    held: Held = []
    for g in _graphs(model.graph):
        kept = []
        for vi in g.value_info:
            copy = onnx.ValueInfoProto()
            copy.CopyFrom(vi)
            kept.append(copy)
        del g.value_info[:]
        held.append((g, kept))
    return settle_types(model, held).stale


def settle_types(model: onnx.ModelProto, held: Held) -> Settled:
    """Run inference on ``model`` without its value_info, replace the declared types it
    contradicts (or that say nothing), then add each graph's value_info entries to it.

    ``checked`` is true only where the strict run saw the same facts the full check would:
    every declared type is the inferred one or was replaced by it; a declared type that says
    more than inference found could fail downstream in the full check alone.
    """
    found, strict = _inferred_types(model)
    stale: list[str] = []
    same = True
    for g, value_infos in held:
        for vi in [*value_infos, *g.output]:
            new = found.get(vi.name)
            if new is None:
                same = same and not _known(vi.type)
            elif not _known(vi.type):
                vi.type.CopyFrom(new)
            elif vi.type != new:
                if _agree(vi.type, new):
                    same = False
                else:
                    vi.type.CopyFrom(new)
                    stale.append(vi.name)
        if value_infos:
            g.value_info.extend(value_infos)
    return Settled(stale, strict and same)


def _inferred_types(model: onnx.ModelProto) -> tuple[dict[str, onnx.TypeProto], bool]:
    """The types inference gives the model's values without its value_info and output
    types, and whether it passed in strict mode (else: its non-strict findings)."""
    if not plan(model).infer:  # inference would expand the calls past any budget
        return {}, False
    probe = weightless_copy(model)
    probe.graph.name = model.graph.name or "graph"
    del probe.graph.value_info[:]
    for vi in probe.graph.output:
        vi.ClearField("type")
    strict = True
    try:
        inferred = onnx.shape_inference.infer_shapes(
            probe, check_type=True, strict_mode=True, data_prop=True
        )
    except Exception:  # the full check will say what: here, what can be inferred
        strict = False
        try:
            inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=False, data_prop=True)
        except Exception:  # inference's own errors on custom domains: keep what is declared
            return {}, False
    found: dict[str, onnx.TypeProto] = {}
    for g in _graphs(inferred.graph):
        for vi in [*g.value_info, *g.output]:
            if vi.name not in found and _known(vi.type):
                found[vi.name] = vi.type
    return found, strict


def _graphs(g: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    """A graph and every body inside it (with a stack: nested generators would pass each
    body up through every level)."""
    stack = [g]
    while stack:
        g = stack.pop()
        yield g
        inner = [sub for node in g.node if node.attribute for sub in bodies(node)]
        stack.extend(reversed(inner))  # the first body next: the order of a recursive walk


def _known(tp: onnx.TypeProto) -> bool:
    """Whether a type says something: a kind, and for tensors an element type."""
    kind = tp.WhichOneof("value")
    if kind in ("tensor_type", "sparse_tensor_type"):
        return bool(getattr(tp, kind).elem_type)
    return kind is not None


def _agree(declared: onnx.TypeProto, inferred: onnx.TypeProto) -> bool:
    """Whether inference can merge the two: same kind and element type, same rank, and no
    dimension whose sizes differ (a symbol against a size is fine)."""
    kind = declared.WhichOneof("value")
    if kind != inferred.WhichOneof("value"):
        return False
    if kind not in ("tensor_type", "sparse_tensor_type"):
        return True
    a, b = getattr(declared, kind), getattr(inferred, kind)
    if a.elem_type and b.elem_type and a.elem_type != b.elem_type:
        return False
    if not (a.HasField("shape") and b.HasField("shape")):
        return True
    if len(a.shape.dim) != len(b.shape.dim):
        return False
    return all(
        not (x.HasField("dim_value") and y.HasField("dim_value")) or x.dim_value == y.dim_value
        for x, y in zip(a.shape.dim, b.shape.dim, strict=True)
    )
