"""Element types and shapes of ONNX values: value_info first, shape inference for the rest."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import onnx

from xocview.formats.onnx.attrs import bodies
from xocview.formats.onnx.text import text
from xocview.model import Tensor
from xocview.model.dtypes import dtype_by_onnx_code

__all__ = ["TypeTable", "dtype_name", "weightless_copy"]

_Decoded = tuple[str, tuple[int, ...], "tuple[str | None, ...] | None", tuple[tuple[str, Any], ...]]

# Initializers up to this many elements stay in the copy given to shape inference, since
# Reshape, Slice, Expand and friends need their values to infer shapes; larger ones are
# declared as typed inputs instead, so inference never copies the weights.
_INFERENCE_VALUE_LIMIT = 1024
# Below this many bytes of inline weights, inference runs on the model itself: copying it
# would cost more than serializing the weights once more.
_COPY_ABOVE_BYTES = 64 << 20


class TypeTable:
    """The type of every named value of a model (including subgraphs), inferred where missing.

    Types are kept as serialized TypeProto bytes: many values share one type, the bytes are a
    cheap key for decoding each distinct type once, and upb hands out a new wrapper object on
    every field access, so holding messages would save nothing. A failing inference (custom
    domains, broken models) leaves the missing types unknown and never stops the load.
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        data: bytes | None = None,
        nested: bool | None = None,
        infer: bool = True,
    ) -> None:
        """``data`` is the serialized ``model`` when at hand, which spares inference a copy;
        ``nested`` says whether the graph's nodes have graph-valued attributes (subgraphs), when
        the caller knows, which spares looking at every node. A wrong False misses subgraph
        types. ``infer``: False keeps to the declared types (inference would expand function
        calls past any budget, in C++ code that cannot be stopped)."""
        self.keys: dict[str, bytes] = {}
        self._described: dict[bytes, _Decoded] = {}
        made: list[str] = []  # what nodes make, gathered by a nested walk on its way
        walk = True if nested is None else nested
        found, untyped = _collect(model.graph, self.keys, walk, made=made if walk else None)
        nested = found if nested is None else nested
        known = self.keys
        # Inference runs only when some value a node makes has no type: known types stay, so
        # it would add nothing else. A flat graph is looked at until its first untyped value,
        # for an exporter that stores no value_info its first node.
        complete = (
            all(not out or out in known for out in made)
            if walk
            else all(not out or out in known for node in model.graph.node for out in node.output)
        )
        if infer and not complete:
            _inferred(model, nested, self.keys, data, untyped)

    def tensor(self, name: str, kind: str) -> Tensor:
        """The tensor ``name`` typed: dtype, shape (-1 for unknown dims) and metadata (dim
        symbols, unknown rank, non-tensor kind)."""
        key = self.keys.get(name, b"")
        known = self._described.get(key)
        if known is None:
            known = self._described[key] = self._decode(onnx.TypeProto.FromString(key))
        dtype, shape, symbols, notes = known
        if notes or symbols:
            metadata: dict[str, Any] = dict(notes)
            if symbols:
                metadata["shape_symbols"] = list(symbols)
            return Tensor(name, kind, list(shape), dtype, metadata)
        return Tensor(name, kind, list(shape), dtype, {})

    def _decode(self, tp: onnx.TypeProto) -> _Decoded:
        """dtype, shape, dim symbols (None when there are none) and metadata of one type.

        A value without a type and a type with nothing set (both the empty key) read alike.
        """
        which = tp.WhichOneof("value")
        if which not in ("tensor_type", "sparse_tensor_type"):
            notes: tuple[tuple[str, Any], ...] = (("rank_unknown", True),)
            if which is not None:
                notes = (("type", which.removesuffix("_type")), *notes)
            return "undefined", (), None, notes
        tt = getattr(tp, which)
        dtype = dtype_name(tt.elem_type)
        notes = (("sparse", True),) if which == "sparse_tensor_type" else ()
        if not tt.HasField("shape"):
            return dtype, (), None, (*notes, ("rank_unknown", True))
        dims = list(tt.shape.dim)
        shape = tuple(int(d.dim_value) if d.HasField("dim_value") else -1 for d in dims)
        symbols = tuple(
            None if d.HasField("dim_value") else (text(d.dim_param) or None) for d in dims
        )
        return dtype, shape, symbols if any(symbols) else None, notes


@lru_cache(maxsize=64)
def dtype_name(code: int) -> str:
    """The name of an ONNX element type number; ``undefined`` for an unknown one."""
    dt = dtype_by_onnx_code(code)
    return dt.name if dt else "undefined"


def _collect(
    g: onnx.GraphProto,
    out: dict[str, bytes],
    nested: bool = True,
    io: bool = True,
    made: list[str] | None = None,
) -> tuple[bool, bool]:
    """Add the typed values of ``g`` (and of its subgraphs when ``nested``) not yet in ``out``,
    the graph before its bodies, bodies in node order (the first of a name wins). ``io``:
    False reads value_info alone (a second pass, when the first found every input and
    output typed: inference adds no graph inputs or outputs). ``made``: when ``nested``, gets
    the names every node outputs.

    Returns whether ``g`` has subgraphs, so that a second pass can skip looking for them, and
    whether some graph input or output had no type.
    """
    found = untyped = False
    stack = [g]
    while stack:
        g = stack.pop()
        groups = (g.input, g.output, g.value_info) if io else (g.value_info,)
        for k, values in enumerate(groups):
            for vi in values:
                name = vi.name
                if name not in out:
                    key = vi.type.SerializeToString()
                    if key or vi.HasField("type"):  # an empty key: unset, or set to nothing
                        out[name] = key
                    elif io and k < 2:
                        untyped = True
        if nested:
            if made is None:
                inner = [sub for node in g.node if node.attribute for sub in bodies(node)]
            else:
                inner = []
                for node in g.node:
                    made.extend(node.output)
                    if node.attribute:
                        inner.extend(bodies(node))
            if inner:
                found = True
                stack.extend(reversed(inner))
    return found, untyped


def _inferred(
    model: onnx.ModelProto, nested: bool, out: dict[str, bytes], data: bytes | None, io: bool
) -> None:
    """Add the types found by ONNX shape inference to ``out`` (known ones stay).

    Inference runs on a copy of the model without its large weights when the weights are large
    enough for the copy to pay, else on the model's own bytes (``data``, when given, spares
    serializing the model once more).
    """
    m: onnx.ModelProto | bytes = model if data is None else data
    if (data is None or len(data) >= _COPY_ABOVE_BYTES) and sum(
        init.ByteSize() for init in model.graph.initializer
    ) >= _COPY_ABOVE_BYTES:  # a file smaller than the limit holds fewer inline weights
        m = weightless_copy(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True)
    except Exception:  # custom domains, invalid models: keep what value_info gave
        return
    _collect(inferred.graph, out, nested, io)


def weightless_copy(model: onnx.ModelProto) -> onnx.ModelProto:
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
