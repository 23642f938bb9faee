"""Declared types that ONNX shape inference contradicts, replaced before a model is written.

The shared model keeps the shapes the source declared or inference found when it was read.
An edit (a Conv's strides, a Gemm's transB) can make them wrong, and a wrong value_info or
graph output type fails the checker's strict inference and onnxruntime's loading. Inference
runs once on a weightless copy without the declared activation types; where it finds a type
the declaration contradicts, or one the model did not know, the inferred one is written.
"""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from xocview.formats.onnx.attrs import bodies
from xocview.formats.onnx.expansion import plan
from xocview.formats.onnx.types import weightless_copy

__all__ = ["replace_stale_types"]


def replace_stale_types(model: onnx.ModelProto) -> list[str]:
    """Give value_info entries and graph outputs the inferred type where theirs contradicts
    it or is missing; returns the names of the values whose declared type was wrong."""
    if not plan(model).infer:  # inference would expand the calls past any budget
        return []
    probe = weightless_copy(model)
    probe.graph.name = model.graph.name or "graph"
    for g in _graphs(probe.graph):
        del g.value_info[:]
    for vi in probe.graph.output:
        vi.ClearField("type")
    try:
        inferred = onnx.shape_inference.infer_shapes(probe, strict_mode=False, data_prop=True)
    except Exception:  # inference's own errors on custom domains: keep what is declared
        return []
    found: dict[str, onnx.TypeProto] = {}
    for g in _graphs(inferred.graph):
        for vi in [*g.value_info, *g.output]:
            if vi.name not in found and _known(vi.type):
                found[vi.name] = vi.type
    stale: list[str] = []
    for g in _graphs(model.graph):
        for vi in [*g.value_info, *g.output]:
            new = found.get(vi.name)
            if new is None:
                continue
            if not _known(vi.type):
                vi.type.CopyFrom(new)
            elif vi.type != new and not _agree(vi.type, new):
                vi.type.CopyFrom(new)
                stale.append(vi.name)
    return stale


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
