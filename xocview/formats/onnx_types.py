"""Element types and shapes of ONNX values: value_info first, shape inference for the rest."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx

from xocview.model.dtypes import dtype_by_onnx_code

__all__ = ["TypeTable"]

# Initializers up to this many elements stay in the copy given to shape inference, since
# Reshape, Slice, Expand and friends need their values to infer shapes; larger ones are
# declared as typed inputs instead, so inference never copies the weights.
_INFERENCE_VALUE_LIMIT = 1024


class TypeTable:
    """TypeProto of every named value of a model (including subgraphs), inferred where missing.

    A failing inference (custom domains, broken models) leaves the missing types unknown and
    never stops the load.
    """

    def __init__(self, model: onnx.ModelProto) -> None:
        self.types: dict[str, onnx.TypeProto] = {}
        _collect(model.graph, self.types)
        if not self._complete(model.graph):
            for name, tp in _inferred(model).items():
                self.types.setdefault(name, tp)

    def _complete(self, g: onnx.GraphProto) -> bool:
        known = self.types
        return all(not out or out in known for node in g.node for out in node.output)

    def dtype_name(self, code: int) -> str:
        dt = dtype_by_onnx_code(code)
        return dt.name if dt else "undefined"

    def describe(self, name: str) -> tuple[str, list[int], dict[str, Any]]:
        """dtype, shape (-1 for unknown dims) and metadata (symbols, unknown rank, kind)."""
        tp = self.types.get(name)
        metadata: dict[str, Any] = {}
        which = tp.WhichOneof("value") if tp is not None else None
        if which not in ("tensor_type", "sparse_tensor_type"):
            if which is not None:
                metadata["type"] = which.removesuffix("_type")
            metadata["rank_unknown"] = True
            return "undefined", [], metadata
        tt = getattr(tp, which)
        if which == "sparse_tensor_type":
            metadata["sparse"] = True
        dtype = self.dtype_name(tt.elem_type)
        if not tt.HasField("shape"):
            metadata["rank_unknown"] = True
            return dtype, [], metadata
        shape: list[int] = []
        symbols: list[str | None] = []
        for dim in tt.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(int(dim.dim_value))
                symbols.append(None)
            else:
                shape.append(-1)
                symbols.append(dim.dim_param or None)
        if any(symbols):
            metadata["shape_symbols"] = symbols
        return dtype, shape, metadata


def _collect(g: onnx.GraphProto, out: dict[str, onnx.TypeProto]) -> None:
    for vi in (*g.input, *g.output, *g.value_info):
        if vi.HasField("type"):
            out.setdefault(vi.name, vi.type)
    for node in g.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _collect(attr.g, out)
            elif attr.type == onnx.AttributeProto.GRAPHS:
                for sub in attr.graphs:
                    _collect(sub, out)


def _inferred(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Types found by ONNX shape inference on a copy of the model without its large weights."""
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
        count = int(np.prod(init.dims, dtype=np.int64))
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
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    except Exception:  # custom domains, invalid models: keep what value_info gave
        return {}
    out: dict[str, onnx.TypeProto] = {}
    _collect(inferred.graph, out)
    return out
