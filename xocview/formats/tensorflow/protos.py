"""TensorFlow's messages as protobuf classes, built once from ``schema`` (``message``), and
a ``TensorProto``'s values as a numpy array (``tensor_array``).

Parsing goes through the protobuf runtime onnx already brings (its C parser), in binary and
in text format alike, so a ``.pb`` and a ``.pbtxt`` give the same messages.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from xocview.formats.tensorflow.schema import DATA_TYPES, SCHEMA
from xocview.model.dtypes import numpy_type

__all__ = [
    "DTYPE_NAMES",
    "PACKAGE",
    "BadTensor",
    "message",
    "shape_of",
    "tensor_array",
    "xoc_dtype",
]

PACKAGE = "xocview.tf"
_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "double": _F.TYPE_DOUBLE,
    "float": _F.TYPE_FLOAT,
    "int64": _F.TYPE_INT64,
    "uint64": _F.TYPE_UINT64,
    "int32": _F.TYPE_INT32,
    "uint32": _F.TYPE_UINT32,
    "fixed32": _F.TYPE_FIXED32,
    "fixed64": _F.TYPE_FIXED64,
    "bool": _F.TYPE_BOOL,
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
}
_ENUMS = {"DataType": DATA_TYPES, "Endianness": {"LITTLE": 0, "BIG": 1}}
_FIELD = re.compile(r"(optional|repeated)?\s*(map<(\w+),\s*(\w+)>|\w+)\s+(\w+)\s*=\s*(\d+);")

# TensorFlow's DataType names as xocview's dtype names; the quantized types read as their
# storage type, a reference type as its value type.
DTYPE_NAMES: dict[int, str] = {
    1: "float32",
    2: "double",
    3: "int32",
    4: "uint8",
    5: "int16",
    6: "int8",
    7: "string",
    8: "complex64",
    9: "int64",
    10: "bool",
    11: "int8",
    12: "uint8",
    13: "int32",
    14: "bfloat16",
    15: "int16",
    16: "uint16",
    17: "uint16",
    18: "complex128",
    19: "float16",
    22: "uint32",
    23: "uint64",
    24: "float8e5m2",
    25: "float8e4m3fn",
    26: "float8e4m3fnuz",
    28: "float8e5m2fnuz",
    29: "int4",
    30: "uint4",
    31: "int2",
    32: "uint2",
    33: "float4e2m1",
}


def xoc_dtype(code: int) -> str:
    """xocview's name for a DataType; resource and variant handles are ``undefined``."""
    return DTYPE_NAMES.get(code % 100 if code > 100 else code, "undefined")


def _field(
    m: descriptor_pb2.DescriptorProto, label: str, kind: str, name: str, number: int
) -> descriptor_pb2.FieldDescriptorProto:
    f = m.field.add(name=name, number=number, json_name=name)
    f.label = _F.LABEL_REPEATED if label == "repeated" else _F.LABEL_OPTIONAL
    if kind in _SCALARS:
        f.type = _SCALARS[kind]
    elif kind in _ENUMS:
        f.type, f.type_name = _F.TYPE_ENUM, f".{PACKAGE}.{kind}"
    else:
        f.type, f.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{kind}"
    return f


def _map_field(m: descriptor_pb2.DescriptorProto, key: str, value: str, name: str, n: int) -> None:
    entry_name = "".join(p.capitalize() for p in name.split("_")) + "Entry"
    entry = m.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "optional", key, "key", 1)
    _field(entry, "optional", value, "value", 2)
    f = m.field.add(name=name, number=n, json_name=name, label=_F.LABEL_REPEATED)
    f.type, f.type_name = _F.TYPE_MESSAGE, f".{PACKAGE}.{m.name}.{entry_name}"


def _file() -> descriptor_pb2.FileDescriptorProto:
    fd = descriptor_pb2.FileDescriptorProto(name="xocview_tf.proto", package=PACKAGE)
    fd.syntax = "editions"  # 2023: fields have presence, strings are checked UTF-8
    fd.edition = descriptor_pb2.EDITION_2023
    for enum, values in _ENUMS.items():
        e = fd.enum_type.add(name=enum)
        for key, code in values.items():
            e.value.add(name=key, number=code)
    for name, body in re.findall(r"message (\w+) \{(.*?)\n\}", SCHEMA, re.S):
        m = fd.message_type.add(name=name)
        oneof = -1
        for line in body.strip().splitlines():
            line = line.strip()
            if line.startswith("oneof "):
                oneof = len(m.oneof_decl)
                m.oneof_decl.add(name=line.split()[1])
                continue
            if line == "}":
                oneof = -1
                continue
            label, kind, key, value, fname, number = _FIELD.fullmatch(line).groups()  # type: ignore[union-attr]
            if key:
                _map_field(m, key, value, fname, int(number))
                continue
            f = _field(m, label or "optional", kind, fname, int(number))
            if oneof >= 0:
                f.oneof_index = oneof
    return fd


@cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return pool


@cache
def message(name: str) -> type[Message]:
    """The class of one schema message by its name (``"GraphDef"``)."""
    return message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{PACKAGE}.{name}"))


# The TensorProto field that holds each type's values when tensor_content is empty.
_VALUE_FIELDS = {
    "float32": "float_val",
    "double": "double_val",
    "int32": "int_val",
    "uint8": "int_val",
    "int16": "int_val",
    "int8": "int_val",
    "uint16": "int_val",
    "int64": "int64_val",
    "bool": "bool_val",
    "uint32": "uint32_val",
    "uint64": "uint64_val",
    "float16": "half_val",
    "bfloat16": "half_val",
    "complex64": "scomplex_val",
    "complex128": "dcomplex_val",
}


def shape_of(shape: Any) -> list[int] | None:
    """A TensorShapeProto as a list (-1 for an unknown size), or None for an unknown rank."""
    if shape.unknown_rank:
        return None
    return [int(d.size) for d in shape.dim]


class BadTensor(ValueError):
    """A TensorProto whose values do not fit its dtype and shape (the message says how)."""


def tensor_array(t: Any) -> np.ndarray:
    """A TensorProto's values; a short value list fills the shape with its last value, as
    TensorFlow does for constants written by value (``float_val: 0`` for a zero fill)."""
    dtype = xoc_dtype(t.dtype)
    shape = shape_of(t.tensor_shape) or []
    if any(d < 0 for d in shape):
        raise BadTensor(f"a constant's shape {shape} has an unknown size")
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == "string":
        flat: np.ndarray = np.array(list(t.string_val), dtype=object)
        return _fill(flat, count, b"").reshape(shape)
    if dtype == "undefined":
        raise BadTensor(f"a constant of DataType {t.dtype} has no values xocview reads")
    npt = numpy_type(dtype)
    if npt is None:
        raise BadTensor(f"a constant of DataType {t.dtype} has no values xocview reads")
    if t.tensor_content:
        content = t.tensor_content
        if len(content) != count * np.dtype(npt).itemsize:
            raise BadTensor(
                f"tensor_content holds {len(content)} bytes; expected {count} {dtype} values"
            )
        return np.frombuffer(content, dtype=npt).reshape(shape)
    values: Any = getattr(t, _VALUE_FIELDS.get(dtype, "int_val"))
    if dtype in ("float16", "bfloat16"):
        flat = np.asarray(values, dtype=np.int64).astype(np.uint16).view(npt)
    elif dtype.startswith("complex"):
        part = np.float64 if dtype == "complex128" else np.float32
        flat = np.asarray(values, dtype=part)
        flat = flat[: flat.size // 2 * 2].view(npt)
    else:
        flat = np.asarray(values).astype(npt)
    return _fill(flat, count, 0).reshape(shape)


def _fill(flat: np.ndarray, count: int, empty: Any) -> np.ndarray:
    """``count`` values from ``flat``: cut, or padded with its last value (or ``empty``)."""
    if flat.size >= count:
        return flat[:count]
    pad = flat[-1] if flat.size else empty
    return np.concatenate([flat, np.full(count - flat.size, pad, dtype=flat.dtype)])
