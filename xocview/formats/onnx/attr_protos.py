"""Attribute values of the shared model (JSON values) as ONNX AttributeProtos.

The inverse of ``attrs``: the ONNX type comes from the operator's schema when it has one, else
from the value itself (an int is INT, a list of floats FLOATS, ``{"tensor": ...}`` TENSOR).
Graph-valued attributes are built by the caller, which knows the bodies.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import numpy as np
import onnx
from google.protobuf import text_format
from onnx import numpy_helper

from xocview.model.attribute_tensor import AttributeTensor
from xocview.model.dtypes import numpy_type

__all__ = ["AttributeProblem", "attribute_proto", "schema_of", "schema_types"]

_A = onnx.AttributeProto

# Fills the given GraphProto in place: a body built apart and copied in would be copied again
# at every level of nesting.
GraphMaker = Callable[[str, dict[str, Any], onnx.GraphProto], None]


class AttributeProblem(ValueError):
    """An attribute value that has no ONNX form; the message says why."""


@lru_cache(maxsize=4096)
def schema_of(op: str, version: int, domain: str) -> onnx.defs.OpSchema | None:
    """The schema of ``op`` in force at opset ``version`` of ``domain``, or None (also for a
    version out of the lookup's range, which it refuses with a TypeError)."""
    if not 0 <= version < 2**31:
        return None
    try:
        return onnx.defs.get_schema(op, version, domain)
    except onnx.defs.SchemaError:
        return None


def schema_types(schema: onnx.defs.OpSchema) -> dict[str, int]:
    """The AttributeProto type of each attribute the schema defines."""
    return {
        name: _A.AttributeType.Value(str(a.type).rsplit(".", 1)[-1])  # "AttrType.INTS"
        for name, a in schema.attributes.items()
    }


def attribute_proto(
    name: str,
    value: Any,
    kind: int | None,
    make_graph: GraphMaker,
    attr: onnx.AttributeProto | None = None,
) -> onnx.AttributeProto:
    """The AttributeProto ``name`` of a JSON value; ``kind`` is the schema's type, or None to
    tell it from the value. ``make_graph(label, value)`` builds a graph-valued one's body
    (``label`` is ``name`` or ``name[i]``). Raises AttributeProblem for a value without an
    ONNX form (a tensor whose values were not kept, a value of another type). ``attr``: the
    (empty) AttributeProto to fill, where it is to be (a new one when not given)."""
    if kind is None:
        kind = _kind_of(value)
    if attr is None:
        attr = onnx.AttributeProto()
    attr.name = name
    attr.type = kind  # type: ignore[assignment]  # the enum's values are ints
    if kind == _A.GRAPH:
        make_graph(name, _one(value, "graph"), attr.g)
    elif kind == _A.GRAPHS:
        for i, v in enumerate(_many(value)):
            make_graph(f"{name}[{i}]", _one(v, "graph"), attr.graphs.add())
    elif kind == _A.TENSOR:
        attr.t.CopyFrom(tensor_of(_one(value, "tensor")["tensor"]))
    elif kind == _A.TENSORS:
        attr.tensors.extend(tensor_of(_one(v, "tensor")["tensor"]) for v in _many(value))
    elif kind == _A.TYPE_PROTO:
        attr.tp.CopyFrom(_type_of(_one(value, "type")["type"]))
    elif kind == _A.TYPE_PROTOS:
        attr.type_protos.extend(_type_of(_one(v, "type")["type"]) for v in _many(value))
    elif kind == _A.SPARSE_TENSOR:
        raise AttributeProblem("a sparse tensor's values are not kept when a model is opened")
    else:
        _scalars(attr, kind, value)
    return attr


def _scalars(attr: onnx.AttributeProto, kind: int, value: Any) -> None:
    if kind == _A.INT:
        attr.i = _int(value)
    elif kind == _A.FLOAT:
        attr.f = _float(value)
    elif kind == _A.STRING:
        attr.s = _bytes(value)
    elif kind == _A.INTS:
        attr.ints.extend(_int(v) for v in _many(value))
    elif kind == _A.FLOATS:
        attr.floats.extend(_float(v) for v in _many(value))
    elif kind == _A.STRINGS:
        attr.strings.extend(_bytes(v) for v in _many(value))
    else:
        raise AttributeProblem(f"attributes of type {_A.AttributeType.Name(kind)} are not written")


def _kind_of(value: Any) -> int:
    """The ONNX type a value without a schema is written as."""
    if isinstance(value, bool | int):
        return _A.INT
    if isinstance(value, float):
        return _A.FLOAT
    if isinstance(value, str):
        return _A.STRING
    if isinstance(value, dict):
        for key, kind in _DICT_KINDS.items():
            if key in value:
                return kind[0]
    if isinstance(value, list):
        if all(isinstance(v, bool | int) for v in value):
            return _A.INTS  # the empty list too: the commonest list type
        if all(isinstance(v, bool | int | float) for v in value):
            return _A.FLOATS
        if all(isinstance(v, str) for v in value):
            return _A.STRINGS
        if all(isinstance(v, dict) for v in value):
            for key, kind in _DICT_KINDS.items():
                if all(key in v for v in value):
                    return kind[1]
    raise AttributeProblem(f"the value {_short(value)} has no ONNX attribute type")


_DICT_KINDS = {
    "graph": (_A.GRAPH, _A.GRAPHS),
    "tensor": (_A.TENSOR, _A.TENSORS),
    "type": (_A.TYPE_PROTO, _A.TYPE_PROTOS),
    "sparse_tensor": (_A.SPARSE_TENSOR, _A.SPARSE_TENSOR),
}


def tensor_of(summary: Any) -> onnx.TensorProto:
    """A tensor attribute from the reader's summary (dtype, shape and the values)."""
    if not isinstance(summary, dict):
        raise AttributeProblem(f"the tensor {_short(summary)} is not a dtype/shape/values dict")
    dtype, shape, values = summary.get("dtype"), summary.get("shape"), summary.get("values")
    np_type = numpy_type(dtype) if isinstance(dtype, str) else None
    if np_type is None or not isinstance(shape, list):
        raise AttributeProblem(f"the tensor has dtype {dtype!r} and shape {shape!r}")
    if isinstance(summary, AttributeTensor) and summary.has_data and values is None:
        return _tensor_of_array(summary.array(), np_type, shape)
    if not isinstance(values, list):
        count = math.prod(int(d) for d in shape)
        raise AttributeProblem(
            f"its {count:,} values were not kept (XOC JSON keeps a large tensor's dtype and "
            "shape only; open the .onnx file to save them)"
        )
    try:
        if np_type.kind == "c":
            arr = np.array([complex(re, im) for re, im in values], dtype=np_type)
        elif np_type.kind == "O":
            arr = np.array(values, dtype=object)
        else:
            arr = np.array(values, dtype=np.float64 if np_type.kind == "V" else None)
            arr = arr.astype(np_type)
        arr = arr.reshape([int(d) for d in shape])
    except (TypeError, ValueError) as e:
        raise AttributeProblem(f"the tensor's values do not fit dtype {dtype} ({e})") from e
    return numpy_helper.from_array(arr)


def _tensor_of_array(arr: np.ndarray, np_type: np.dtype, shape: list[Any]) -> onnx.TensorProto:
    """A TensorProto of values read from the source file (raw bytes, so bit-exact); raises
    FormatError as the reader does, AttributeProblem when they do not fit the summary."""
    want = [int(d) for d in shape]
    if list(arr.shape) != want or (arr.dtype != np_type and np_type.kind != "O"):
        raise AttributeProblem(
            f"the tensor's values have shape {list(arr.shape)} and dtype {arr.dtype}; "
            f"expected shape {want} and dtype {np_type}"
        )
    try:
        return numpy_helper.from_array(np.asarray(arr))
    except (TypeError, ValueError) as e:
        raise AttributeProblem(f"the tensor's values cannot be written ({e})") from e


def _type_of(text: Any) -> onnx.TypeProto:
    tp = onnx.TypeProto()
    try:
        text_format.Parse(str(text), tp)
    except text_format.ParseError as e:
        raise AttributeProblem(f"the type {_short(text)} cannot be parsed ({e})") from e
    return tp


def _one(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict) or key not in value:
        raise AttributeProblem(f"the value {_short(value)} is not a {{'{key}': ...}} dict")
    return value


def _many(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise AttributeProblem(f"the value {_short(value)} is not a list")
    return value


def _int(value: Any) -> int:
    if isinstance(value, bool | int):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise AttributeProblem(f"the value {_short(value)} is not an integer")


def _float(value: Any) -> float:
    if isinstance(value, bool | int | float):
        return float(value)
    raise AttributeProblem(f"the value {_short(value)} is not a number")


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    raise AttributeProblem(f"the value {_short(value)} is not a string")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
