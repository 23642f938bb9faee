"""Element types and shapes of ONNX values: value_info first, shape inference for the rest."""

from __future__ import annotations

import math
from typing import Any

import onnx

from xocview.model.dtypes import dtype_by_onnx_code

__all__ = ["TypeTable"]

_Decoded = tuple[str, tuple[int, ...], tuple["str | None", ...], tuple[tuple[str, Any], ...]]

# Initializers up to this many elements stay in the copy given to shape inference, since
# Reshape, Slice, Expand and friends need their values to infer shapes; larger ones are
# declared as typed inputs instead, so inference never copies the weights.
_INFERENCE_VALUE_LIMIT = 1024
# Below this many bytes of inline weights, inference runs on the model itself: copying it
# would cost more than serializing the weights once more.
_COPY_ABOVE_BYTES = 64 << 20


class TypeTable:
    """TypeProto of every named value of a model (including subgraphs), inferred where missing.

    A failing inference (custom domains, broken models) leaves the missing types unknown and
    never stops the load.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self.types: dict[str, onnx.TypeProto] = {}
        self._described: dict[bytes, _Decoded] = {}
        nested = _collect(model.graph, self.types)
        if not self._complete(model.graph):
            for name, tp in _inferred(model, nested).items():
                self.types.setdefault(name, tp)

    def _complete(self, g: onnx.GraphProto) -> bool:
        if len(g.node) and not len(g.value_info):
            return False  # exporters that store no value_info: no need to look further
        known = self.types
        return all(not out or out in known for node in g.node for out in node.output)

    def dtype_name(self, code: int) -> str:
        dt = dtype_by_onnx_code(code)
        return dt.name if dt else "undefined"

    def describe(self, name: str) -> tuple[str, list[int], dict[str, Any]]:
        """dtype, shape (-1 for unknown dims) and metadata (symbols, unknown rank, kind).

        Many values share one type, so each distinct TypeProto is decoded once.
        """
        tp = self.types.get(name)
        key = tp.SerializeToString() if tp is not None else b""
        known = self._described.get(key)
        if known is None:
            known = self._described[key] = self._decode(tp)
        dtype, shape, symbols, notes = known
        metadata: dict[str, Any] = dict(notes)
        if any(symbols):
            metadata["shape_symbols"] = list(symbols)
        return dtype, list(shape), metadata

    def _decode(self, tp: onnx.TypeProto | None) -> _Decoded:
        """dtype, shape, dim symbols and metadata items of one TypeProto."""
        which = tp.WhichOneof("value") if tp is not None else None
        if tp is None or which not in ("tensor_type", "sparse_tensor_type"):
            notes: tuple[tuple[str, Any], ...] = (("rank_unknown", True),)
            if which is not None:
                notes = (("type", which.removesuffix("_type")), *notes)
            return "undefined", (), (), notes
        tt = getattr(tp, which)
        dtype = self.dtype_name(tt.elem_type)
        notes = (("sparse", True),) if which == "sparse_tensor_type" else ()
        if not tt.HasField("shape"):
            return dtype, (), (), (*notes, ("rank_unknown", True))
        dims = list(tt.shape.dim)
        shape = tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in dims)
        symbols = tuple(None if d.HasField("dim_value") else (d.dim_param or None) for d in dims)
        return dtype, shape, symbols, notes


def _collect(g: onnx.GraphProto, out: dict[str, onnx.TypeProto], nested: bool = True) -> bool:
    """Add the typed values of ``g`` (and of its subgraphs when ``nested``) to ``out``.

    Returns whether ``g`` has subgraphs, so that a second pass can skip looking for them.
    """
    for vi in (*g.input, *g.output, *g.value_info):
        if vi.HasField("type"):
            out.setdefault(vi.name, vi.type)
    found = False
    if nested:
        for node in g.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    _collect(attr.g, out)
                    found = True
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    for sub in attr.graphs:
                        _collect(sub, out)
                    found = True
    return found


def _inferred(model: onnx.ModelProto, nested: bool) -> dict[str, onnx.TypeProto]:
    """Types found by ONNX shape inference, on a copy of the model without its large weights
    when the weights are large enough for the copy to pay."""
    inline = sum(init.ByteSize() for init in model.graph.initializer)
    m = model if inline < _COPY_ABOVE_BYTES else _weightless_copy(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    except Exception:  # custom domains, invalid models: keep what value_info gave
        return {}
    out: dict[str, onnx.TypeProto] = {}
    _collect(inferred.graph, out, nested)
    return out


def _weightless_copy(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with large initializers declared as typed inputs instead of carried along."""
    m = onnx.ModelProto()
    m.ir_version = model.ir_version
    m.opset_import.extend(model.opset_import)
    m.functions.extend(model.functions)
    src, g = model.graph, m.graph
    g.node.extend(src.node)
    g.input.extend(src.input)
    g.output.extend(src.output)
    g.value_info.extend(src.value_info)
    declared = {vi.name for vi in src.input}
    for init in src.initializer:
        count = math.prod(init.dims)
        if count <= _INFERENCE_VALUE_LIMIT and init.data_location != onnx.TensorProto.EXTERNAL:
            g.initializer.append(init)
        elif init.name not in declared:
            g.input.append(
                onnx.helper.make_tensor_value_info(init.name, init.data_type, list(init.dims))
            )
    for sp in src.sparse_initializer:
        if sp.values.name not in declared:
            g.input.append(
                onnx.helper.make_tensor_value_info(
                    sp.values.name, sp.values.data_type, list(sp.dims)
                )
            )
    if m.ir_version < 4 and len(g.initializer) < len(src.initializer):
        m.ir_version = 4  # inputs without initializers need IR >= 4 to be legal
    return m
