"""ONNX attribute values as JSON values for the shared model (and XOC JSON)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from xocview.errors import shorten
from xocview.formats.onnx.data import data_problem
from xocview.formats.onnx.text import NotText
from xocview.formats.onnx.weights import part_reader
from xocview.model.attribute_tensor import AttributeTensor
from xocview.model.dotted import expand_dotted_if_possible
from xocview.model.dtypes import dtype_by_onnx_code
from xocview.model.schema import schema_attributes

__all__ = [
    "GRAPH_TYPES",
    "MAX_TENSOR_VALUES",
    "Folder",
    "attribute_value",
    "bodies",
    "node_attributes",
    "tensor_summary",
]

# A tensor attribute (Constant's value, ConstantOfShape's value) keeps its values as JSON up to
# this many elements; larger ones (and external, damaged or exotic ones) keep dtype and shape as
# JSON and their values behind a lazy reader (``AttributeTensor``), read on first use.
MAX_TENSOR_VALUES = 65536

# The model's folder and file name, against which a tensor's external data is read; None where
# the values are not needed (a function call's attributes, kept as metadata).
Folder = tuple[Path, str] | None

_A = onnx.AttributeProto
GRAPH_TYPES = (_A.GRAPH, _A.GRAPHS)


def attribute_value(attr: onnx.AttributeProto, folder: Folder = None, place: str = "") -> Any:
    """The JSON form of an attribute; subgraphs are left to the caller (returns None).

    A tensor's values that JSON does not hold are read, on first use, against ``folder``;
    ``place`` names the attribute in the reader's messages.
    """
    t = attr.type
    if t == _A.FLOAT:
        return _f32(attr.f)
    if t == _A.INT:
        return int(attr.i)
    if t == _A.STRING:
        return _text(attr.s)
    if t == _A.FLOATS:
        return [_f32(v) for v in attr.floats]
    if t == _A.INTS:
        return [int(v) for v in attr.ints]
    if t == _A.STRINGS:
        return [_text(s) for s in attr.strings]
    if t == _A.TENSOR:
        return {"tensor": tensor_summary(attr.t, folder, place)}
    if t == _A.TENSORS:
        return [
            {"tensor": tensor_summary(x, folder, f"{place}[{k}]")}
            for k, x in enumerate(attr.tensors)
        ]
    if t == _A.SPARSE_TENSOR:
        return {"sparse_tensor": {"dims": [int(d) for d in attr.sparse_tensor.dims]}}
    if t == _A.TYPE_PROTO:
        return {"type": _text(str(attr.tp).strip())}
    if t == _A.TYPE_PROTOS:
        return [{"type": _text(str(x).strip())} for x in attr.type_protos]
    return None


def tensor_summary(
    tensor: onnx.TensorProto, folder: Folder = None, place: str = ""
) -> dict[str, Any]:
    """dtype, shape and the values of a tensor held in an attribute: as JSON when few and
    inline, else (given ``folder``) behind a reader that decodes or memory-maps them on first
    use, inline or external, as initializers are read."""
    dt = dtype_by_onnx_code(tensor.data_type)
    out: dict[str, Any] = {
        "dtype": dt.name if dt else str(tensor.data_type),
        "shape": [int(d) for d in tensor.dims],
    }
    if (
        math.prod(out["shape"]) <= MAX_TENSOR_VALUES
        and tensor.data_location != onnx.TensorProto.EXTERNAL
        and data_problem(tensor) is None  # damaged data: its reader says why on use
    ):
        values = _json_values(tensor)
        if values is not None:
            out["values"] = values
            return out
    if folder is None:
        return out
    return AttributeTensor(out, part_reader(tensor, folder[0], folder[1], place))


def _json_values(tensor: onnx.TensorProto) -> list[Any] | None:
    """The values as a JSON list, or None for a type numpy cannot hold."""
    try:
        values = numpy_helper.to_array(tensor)
    except Exception:  # exotic types numpy cannot hold: the lazy reader says why on use
        return None
    if values.dtype.kind in "SUO":
        return [_text(v) if isinstance(v, bytes) else str(v) for v in values.ravel().tolist()]
    if values.dtype.kind == "c":
        return [[z.real, z.imag] for z in values.ravel().tolist()]
    return list(values.ravel().tolist())


def _f32(value: float) -> float:
    """The shortest decimal that is the same float32 (1e-05, not 9.999999747378752e-06)."""
    return _shortest_f32(value) if value else value  # 0.0 and -0.0 are already shortest


@lru_cache(maxsize=4096)
def _shortest_f32(value: float) -> float:
    """``_f32`` of a non-zero value; models repeat a few values (epsilons, alphas) many times.

    Zeros stay out: the cache would give -0.0 the answer for 0.0, which compare equal.
    """
    return float(str(np.float32(value)))


def _text(raw: bytes | str) -> str:
    """Free text of an attribute; bytes that are not UTF-8 get replacement characters."""
    return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")


# The domains whose operators ONNX's schemas define: their attributes are schema attributes.
_ONNX_DOMAINS = frozenset(
    {"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview", "ai.onnx.preview.training"}
)


def node_attributes(
    proto: onnx.NodeProto,
    op: str,
    domain: str,
    metadata: dict[str, Any],
    call_attrs: dict[str, onnx.AttributeProto] | None,
    folder: Folder = None,
) -> tuple[dict[str, Any], list[tuple[str, onnx.GraphProto]], bool]:
    """Schema attributes and graph-valued ones (subgraphs); the rest go to ``metadata``.

    The flag tells whether the node has any graph-valued attribute (its bodies' value_info
    must then be read too). ``call_attrs`` resolve a function body's attribute references.
    Tensors' values that JSON does not hold are read, on first use, against ``folder``.
    """
    allowed = schema_attributes(op) if domain in _ONNX_DOMAINS else None
    schema: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    subgraphs: list[tuple[str, onnx.GraphProto]] = []
    has_graphs = False
    for attr in proto.attribute:
        kind = attr.type
        if kind in GRAPH_TYPES:
            has_graphs = True
        ref_name = attr.ref_attr_name
        if ref_name:
            if call_attrs is None or ref_name not in call_attrs:
                continue  # an optional attribute the call did not set
            own_name = attr.name  # the value is the call's, the name the node's
            attr = onnx.AttributeProto()
            attr.CopyFrom(call_attrs[ref_name])
            attr.name = own_name or attr.name
            kind = attr.type
        name = attr.name
        if name.__class__ is not str:
            raise NotText
        if kind == onnx.AttributeProto.GRAPH:
            sub = attr.g
            subgraphs.append((name, sub))
            value: Any = {"graph": _text(sub.name) or name}
        elif kind == onnx.AttributeProto.GRAPHS:
            graphs = list(attr.graphs)
            subgraphs.extend((f"{name}[{i}]", sg) for i, sg in enumerate(graphs))
            value = [{"graph": _text(sg.name) or f"{name}[{i}]"} for i, sg in enumerate(graphs)]
        elif kind in _TENSOR_TYPES and folder is not None:
            value = attribute_value(attr, folder, _tensor_place(proto, op, name))
        else:
            value = attribute_value(attr)
        if allowed is not None and name in allowed:
            schema[name] = value
        else:
            extra[name] = value
    if extra:
        metadata["attributes"] = expand_dotted_if_possible(extra)
    return schema, subgraphs, has_graphs


_TENSOR_TYPES = (_A.TENSOR, _A.TENSORS)


def _tensor_place(proto: onnx.NodeProto, op: str, name: str) -> str:
    """``node 'c' (Constant) attribute 'value'``, as ``external.model_tensors`` says it."""
    label = f"node '{shorten(_text(proto.name))}'" if proto.name else "node"
    return f"{label} ({op}) attribute '{shorten(name)}'"


def bodies(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    """The graphs a node's attributes hold (an If's branches, a Loop's or Scan's body), in
    attribute order."""
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs
