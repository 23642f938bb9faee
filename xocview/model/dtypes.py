"""Element types: the XOC spec's seven names plus ONNX's other types under their ONNX names."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["DTYPES", "DType", "canonical_dtype", "dtype_by_onnx_code"]


class DType(NamedTuple):
    """One element type; ``bits`` is the storage width (strings have none)."""

    name: str
    onnx_code: int
    bits: int | None
    numpy: str | None


# The XOC spec names seven types; every other ONNX TensorProto type keeps its lower-cased ONNX
# name ("double", "bfloat16", "float8e4m3fn"), so ONNX -> XOC JSON -> model loses nothing.
DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("undefined", 0, None, None),  # ONNX UNDEFINED: a value whose type nobody knows
        DType("float32", 1, 32, "float32"),
        DType("uint8", 2, 8, "uint8"),
        DType("int8", 3, 8, "int8"),
        DType("uint16", 4, 16, "uint16"),
        DType("int16", 5, 16, "int16"),
        DType("int32", 6, 32, "int32"),
        DType("int64", 7, 64, "int64"),
        DType("string", 8, None, "object"),
        DType("bool", 9, 8, "bool"),
        DType("float16", 10, 16, "float16"),
        DType("double", 11, 64, "float64"),
        DType("uint32", 12, 32, "uint32"),
        DType("uint64", 13, 64, "uint64"),
        DType("complex64", 14, 64, "complex64"),
        DType("complex128", 15, 128, "complex128"),
        DType("bfloat16", 16, 16, None),
        DType("float8e4m3fn", 17, 8, None),
        DType("float8e4m3fnuz", 18, 8, None),
        DType("float8e5m2", 19, 8, None),
        DType("float8e5m2fnuz", 20, 8, None),
        DType("uint4", 21, 4, None),
        DType("int4", 22, 4, None),
        DType("float4e2m1", 23, 4, None),
        DType("float8e8m0", 24, 8, None),
        DType("uint2", 25, 2, None),
        DType("int2", 26, 2, None),
        DType("float6e2m3", 27, 6, None),
        DType("float6e3m2", 28, 6, None),
    )
}

# Spellings other tools write for the same types (numpy names, ONNX's "float").
_ALIASES = {
    "float": "float32",
    "float64": "double",
    "half": "float16",
    "boolean": "bool",
    "str": "string",
}

_BY_CODE = {d.onnx_code: d for d in DTYPES.values()}


def canonical_dtype(name: str) -> str | None:
    """The canonical spelling of a dtype name, or None when no type has that name."""
    key = name.strip().lower()
    if key in DTYPES:
        return key
    return _ALIASES.get(key)


def dtype_by_onnx_code(code: int) -> DType | None:
    """The dtype of an ONNX ``TensorProto.DataType`` number, or None for an unknown number."""
    return _BY_CODE.get(code)
